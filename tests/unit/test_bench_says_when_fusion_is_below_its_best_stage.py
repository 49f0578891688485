"""``hybrid-rag bench`` says why when the fused mode scores below its best single stage (which
stage, by how much, and that fusion is a trade-off on that set), and says nothing when it does not."""

from __future__ import annotations

import pytest

from hybrid_rag.evaluation.bench import format_quick_bench

LATENCY = {"total": {"p50": 1.0, "p95": 2.0}}


def bench(ndcg: dict[str, float]) -> dict:
    """A quick-bench result (as ``run_quick_bench`` returns it) with these nDCG@10 per mode."""
    metrics = {m: {"ndcg@10": v, "mrr@10": v, "recall@50": 1.0} for m, v in ndcg.items()}
    return {
        "corpus": {"docs": 30, "chunks": 68, "queries": 15},
        "embedder": "m",
        "ingest_seconds": 1.0,
        "seconds": 2.0,
        "modes": {m: {"metrics": metrics[m], "latency_ms": LATENCY} for m in ndcg},
        "checks": [],
    }


@pytest.mark.parametrize(
    ("ndcg", "stage", "gap"),
    [
        ({"bm25": 1.0, "dense": 0.462, "hybrid": 0.942}, "bm25", "0.058"),  # the bench with MiniLM
        ({"bm25": 0.632, "dense": 0.886, "hybrid": 0.8807}, "dense", "0.005"),  # cosqa's default
    ],
)
def test_a_fused_score_below_its_best_stage_is_explained(ndcg: dict[str, float], stage: str, gap: str):
    text = format_quick_bench(bench(ndcg))
    (line,) = [ln for ln in text.splitlines() if ln.startswith("note:")]
    assert f"hybrid nDCG@10 {ndcg['hybrid']:.3f} is {gap} below {stage} alone ({ndcg[stage]:.3f})" in line
    assert "trade-off on this set" in line and "docs/retrieval.md" in line


@pytest.mark.parametrize("hybrid", [1.0, 0.9996, 1.0004])
def test_a_fused_score_level_with_or_above_its_best_stage_gets_no_note(hybrid: float) -> None:
    text = format_quick_bench(bench({"bm25": 1.0, "dense": 0.5, "hybrid": hybrid}))
    assert "note:" not in text


def test_a_bench_without_every_mode_gets_no_note() -> None:
    assert "note:" not in format_quick_bench(bench({"bm25": 1.0, "hybrid": 0.5}))
