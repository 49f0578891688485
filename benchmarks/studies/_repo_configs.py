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


CONFIGS: tuple[BenchConfig, ...] = (
    BenchConfig("default", "the shipped settings, unchanged"),
    BenchConfig("bm25", "BM25 alone", "bm25", OPTIONAL_STAGES_OFF),
    BenchConfig("dense", "dense alone", "dense", OPTIONAL_STAGES_OFF),
    BenchConfig("+tests-0.8", "default + path prior 0.8 on test files", overrides=tests_prior(0.8)),
    *(cross_encoder(d, b, w) for d in (20, 10) for b, w in (("linear", 0.3), ("linear", 0.5), ("none", 1.0))),
    *(
        BenchConfig(
            f"+code-bm25-{w}",
            f"default with code chunks fused at BM25 weight {w} (dense {1 - w:.2f}; shipped 0.15)",
            overrides={"retrieval.code_dense_weight": round(1 - w, 2), "retrieval.code_bm25_weight": w},
        )
        for w in (0.3, 0.45)
    ),
    BenchConfig(
        "+defs",
        "default with long chunks embedded in windows cut at definitions (embedding.window_split)",
        overrides={"embedding.window_split": "definitions"},
    ),
    BenchConfig(
        "+bge-small",
        "default with bge-small-en-v1.5 (ONNX) as the embedder",
        overrides={"embedding.model": "bge-small-en-v1.5"},
    ),
)
# configurations whose context is built and scored (a context a query costs ~1 s on a busy machine)
CONTEXT_CONFIGS = frozenset(
    {"default", "+tests-0.8", "+ce20-linear-0.3", "+ce10-linear-0.3", "+bge-small", "+defs"}
)


def query_unchanged(config: BenchConfig) -> bool:
    """Whether ``config`` sets how the context is built: its query results are those of the same
    configuration without its ``context.*`` keys, which the list holds (the judged datasets,
    scored on queries alone, skip it)."""
    return any(k.startswith("context.") for k in config.overrides)
