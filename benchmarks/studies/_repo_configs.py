"""The repository benchmark's configurations (data, not code): the default and its single stages.

Each is a :class:`studies._suite_configs.BenchConfig` (features and dotted settings overrides),
so a ``rerank.*`` or ``embedding.*`` override measures a cross-encoder or another model the same
way; ``default`` is whatever ``configs/default.yaml`` ships and every row is tested against it.
"""

from __future__ import annotations

from typing import Any

from studies._suite_configs import OPTIONAL_STAGES_OFF, BenchConfig

BASELINE = "default"
TESTS = ("tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")


def tests_prior(weight: float) -> dict[str, Any]:
    return {"retrieval.path_priors": [{"pattern": p, "weight": weight} for p in TESTS]}


CONTEXT_CHOICES = {"context.quote_imports": False, "context.heading_tests": False}
CONFIGS: tuple[BenchConfig, ...] = (
    BenchConfig("default", "the shipped settings, unchanged"),
    BenchConfig("bm25", "BM25 alone", "bm25", OPTIONAL_STAGES_OFF),
    BenchConfig("dense", "dense alone", "dense", OPTIONAL_STAGES_OFF),
    BenchConfig("+tests-0.8", "default + path prior 0.8 on test files", overrides=tests_prior(0.8)),
    BenchConfig("+tests-0.5", "default + path prior 0.5 on test files", overrides=tests_prior(0.5)),
    BenchConfig(
        "+tests-0.8 context-choices",
        "default + prior 0.8 on tests + the context's choices",
        overrides={**tests_prior(0.8), **CONTEXT_CHOICES},
    ),
    BenchConfig(
        "+tests-0.5 context-choices",
        "default + prior 0.5 on tests + the context's choices",
        overrides={**tests_prior(0.5), **CONTEXT_CHOICES},
    ),
)
# configurations whose context is built and scored (a context a query costs ~1 s on a busy machine)
CONTEXT_CONFIGS = frozenset({"default", "+tests-0.8 context-choices", "+tests-0.5 context-choices"})


def query_unchanged(config: BenchConfig) -> bool:
    """Whether ``config`` sets how the context is built: its query results are those of the same
    configuration without its ``context.*`` keys, which the list holds (the judged datasets,
    scored on queries alone, skip it)."""
    return any(k.startswith("context.") for k in config.overrides)
