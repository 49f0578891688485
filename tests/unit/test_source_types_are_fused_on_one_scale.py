"""Fusion weighs each chunk by its source type's lists, and every type's weights sum alike.

An expansion list that weighs text chunks but not code chunks (``code_expansion_weight: 0``, the
default) must move text chunks among themselves, not lift every text chunk above code: before the
weights were scaled to one sum, a text chunk got 1.5 times the weight of a code chunk and the docs
of a repository crowded out its code (RESULTS.md#repository-answers).
"""

from __future__ import annotations

import pytest
from context_cases import scored_chunk
from fake_settings import fake_settings
from stage_retriever import stage_retriever

from hybrid_rag.retrieval.retriever import Candidates, HybridRetriever
from hybrid_rag.settings import Settings
from hybrid_rag.types import Chunk, Hit, SourceType


def _chunk(i: int, source_type: SourceType) -> Chunk:
    return scored_chunk(i, "x", code=source_type is SourceType.CODE).chunk


def _retriever(overrides: dict[str, object]) -> HybridRetriever:
    return stage_retriever(fake_settings(overrides=overrides))


# chunk 1 is code, chunk 2 text; both stand out equally in both first-pass lists, and the
# expansion lists rank them the same way too
RUNS = {
    name: [Hit(1, 1.0), Hit(2, 1.0), Hit(3, 0.0), Hit(4, 0.0)]
    for name in ("dense", "bm25", "prf_dense", "prf_bm25")
}
ROWS = {
    1: _chunk(1, SourceType.CODE),
    2: _chunk(2, SourceType.TEXT),
    3: _chunk(3, SourceType.CODE),
    4: _chunk(4, SourceType.TEXT),
}


@pytest.mark.parametrize("fusion", ["zscore", "weighted"])
def test_a_list_that_weighs_only_text_does_not_lift_text_above_code(fusion: str) -> None:
    retriever = _retriever(
        {
            "retrieval.fusion": fusion,
            "retrieval.dense_weight": 0.7,
            "retrieval.bm25_weight": 0.3,
            "retrieval.code_dense_weight": 0.7,
            "retrieval.code_bm25_weight": 0.3,
            "retrieval.code_expansion_weight": 0.0,
            "retrieval.expansion_weight": 0.5,
        }
    )
    fused = {f.id: f.score for f in retriever.fuse(Candidates(RUNS), RUNS, ROWS)}
    assert fused[1] == pytest.approx(fused[2])  # same evidence, same score, whatever weighs it
    assert fused[3] == pytest.approx(fused[4])


def test_equal_expansion_shares_keep_the_first_pass_pair_as_it_was() -> None:
    base = {"retrieval.code_expansion_weight": 0.5, "retrieval.expansion_weight": 0.5}
    runs = {"dense": [Hit(1, 0.9), Hit(2, 0.5), Hit(3, 0.1)], "bm25": [Hit(2, 7.0), Hit(3, 6.0), Hit(1, 0.0)]}
    fused = [f.id for f in _retriever(base).fuse(Candidates(runs), runs, ROWS)]
    alone = [f.id for f in _retriever({}).fuse(Candidates(runs), runs, ROWS)]
    assert fused == alone  # no expansion lists: nothing to scale


def test_defaults_leave_code_without_expansion_and_weigh_test_files_and_stubs_down() -> None:
    r = Settings().retrieval
    assert (r.expansion_share("text"), r.expansion_share("code")) == (0.5, 0.0)
    assert {p.pattern for p in r.path_priors} >= {"tests/**", "**/test_*", "**/conftest.py", "**/*.pyi"}
    assert all(p.weight == 0.6 for p in r.path_priors)
