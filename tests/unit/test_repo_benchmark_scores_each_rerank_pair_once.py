"""The repository benchmark's kept reranker (``benchmarks/studies/repo_search.py``): the
configurations that differ only in the cross-encoder's depth and blend score each (query, chunk)
pair once, and get the scores the wrapped reranker gives, in the candidates' order."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from studies.repo_search import MemoReranker  # noqa: E402

from hybrid_rag.types import Chunk, ScoredChunk, SourceType  # noqa: E402


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.pairs = 0

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        self.pairs += len(candidates)
        return np.array([len(query) + c.id for c in candidates], dtype=np.float64)


def scored(chunk_id: int) -> ScoredChunk:
    chunk = Chunk(chunk_id, chunk_id, "a.py", 0, 1, 2, "h", 10, str(chunk_id), SourceType.CODE, "python", "c")
    return ScoredChunk(chunk, 1.0)


def test_a_pair_is_scored_once_and_gets_the_wrapped_score() -> None:
    inner = Counting()
    kept = MemoReranker(inner)
    head20 = [scored(i) for i in range(20)]
    first = kept.score("q", head20)
    again = kept.score("q", list(reversed(head20[:10])))
    assert inner.pairs == 20 and kept.name == "counting"
    assert list(first) == [1.0 + i for i in range(20)]
    assert list(again) == [1.0 + i for i in reversed(range(10))]
    kept.score("another query", head20[:5])
    assert inner.pairs == 25
