"""MMR: the formula against a naive reference, lambda = 1 is relevance order, degenerate inputs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hybrid_rag.retrieval.mmr import apply_mmr, mmr_select
from hybrid_rag.types import Chunk, ScoredChunk, SourceType


def _marginal(vecs: np.ndarray, rel: np.ndarray, lam: float, selected: list[int], i: int) -> float:
    """The MMR objective of candidate i given the selected ones, written out literally."""
    unit = [v / np.linalg.norm(v) if np.linalg.norm(v) > 0 else v for v in vecs.astype(np.float64)]
    lo, hi = rel.min(), rel.max()
    norm = np.ones_like(rel) if hi - lo <= 1e-12 else (rel - lo) / (hi - lo)
    if not selected:
        return float(norm[i])
    penalty = max(float(unit[i] @ unit[s]) for s in selected)
    return float(lam * norm[i] - (1 - lam) * penalty)


def _reference(vecs: np.ndarray, rel: np.ndarray, lam: float, top_n: int) -> list[int]:
    """MMR one candidate at a time (slow, obviously right); ties: higher raw relevance, lower index."""
    selected: list[int] = []
    while len(selected) < min(top_n, len(vecs)):
        rest = [i for i in range(len(vecs)) if i not in selected]
        selected.append(max(rest, key=lambda i: (_marginal(vecs, rel, lam, selected, i), rel[i], -i)))
    return selected


def _relevance_order(rel: np.ndarray) -> list[int]:
    return np.argsort(-rel, kind="stable").tolist()


def _chunk(i: int) -> Chunk:
    return Chunk(i, 1, "/a.py", i, i, i, f"text {i}", 1, "0" * 64, SourceType.CODE, "python", "default")


def _scored(scores: list[float]) -> list[ScoredChunk]:
    return [ScoredChunk(_chunk(i + 100), s, {"fusion": s}) for i, s in enumerate(scores)]


vectors = st.integers(1, 12).flatmap(
    lambda n: st.tuples(
        arrays(np.float64, (n, 4), elements=st.floats(-1, 1, allow_nan=False, width=32)),
        arrays(np.float64, (n,), elements=st.floats(-5, 5, allow_nan=False, width=32)),
    )
)


def test_a_worked_example():
    v = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0], [0.7, 0.7]])
    rel = np.array([4.0, 3.9, 1.0, 2.0])
    assert mmr_select(None, v, rel, 1.0, 4) == [0, 1, 3, 2]
    # rel normalised [1, .967, 0, .333]; after 0: index 1 scores .5*.967 - .5*.99 = -.012,
    # 2 scores 0 - 0 = 0, 3 scores .5*.333 - .5*.707 = -.187; then 1 still beats 3
    assert mmr_select(None, v, rel, 0.5, 4) == [0, 2, 1, 3]


@settings(max_examples=200, deadline=None)
@given(vectors, st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]), st.integers(0, 15))
def test_matches_the_naive_reference(data, lam, top_n):
    vecs, rel = data
    got = mmr_select(None, vecs, rel, lam, top_n)
    want = _reference(vecs, rel, lam, top_n)
    assert len(got) == len(want)
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        if g != w:  # allowed only where two marginal scores tie to within rounding; then paths part
            prefix = want[:j]
            assert _marginal(vecs, rel, lam, prefix, g) == pytest.approx(
                _marginal(vecs, rel, lam, prefix, w), abs=1e-9
            )
            break


@settings(max_examples=200, deadline=None)
@given(vectors, st.integers(0, 15))
def test_lambda_one_is_plain_relevance_order(data, top_n):
    vecs, rel = data
    assert mmr_select(None, vecs, rel, 1.0, top_n) == _relevance_order(rel)[: max(top_n, 0)]


@settings(max_examples=200, deadline=None)
@given(vectors, st.floats(0, 1), st.integers(-2, 15))
def test_output_is_a_prefix_of_a_permutation(data, lam, top_n):
    vecs, rel = data
    out = mmr_select(None, vecs, rel, lam, top_n)
    assert len(out) == max(0, min(top_n, len(vecs)))
    assert len(set(out)) == len(out)
    assert all(0 <= i < len(vecs) for i in out)
    if out:
        assert out[0] == int(np.argmax(rel))  # the first pick is always the most relevant


@settings(max_examples=100, deadline=None)
@given(
    arrays(np.float64, (5, 8), elements=st.floats(-1, 1, allow_nan=False, width=32)),
    st.floats(0.1, 0.8),
)
def test_a_near_duplicate_of_the_top_item_is_pushed_down(others, lam):
    top = np.zeros(8)
    top[0] = 1.0
    others = others.copy()
    others[:, 0] = 0.0  # every other candidate is orthogonal to the top item
    assume(np.all(np.linalg.norm(others, axis=1) > 0.1))
    duplicate = top + 0.01 * np.eye(8)[1]
    vecs = np.vstack([top, duplicate, others])
    rel = np.array([1.0, 0.99, 0.9, 0.8, 0.7, 0.6, 0.5])
    assert _relevance_order(rel)[1] == 1
    out = mmr_select(None, vecs, rel, lam, len(vecs))
    # dup: lam*.99 - (1-lam)*~1; any other: lam*rel - (1-lam)*max_sim with cos(other, top) = 0
    assert out[0] == 0
    assert out.index(1) > 1


def test_relevance_none_uses_cosine_to_the_query():
    v = np.array([[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    q = np.array([2.0, 0.0])  # not normalised: normalised inside
    assert mmr_select(q, v, None, 1.0, 3) == [1, 2, 0]
    with pytest.raises(ValueError, match="relevance array or a query vector"):
        mmr_select(None, v, None, 0.5, 3)


def test_degenerate_inputs():
    v = np.eye(3)
    rel = np.array([1.0, 2.0, 3.0])
    assert mmr_select(None, v, rel, 0.5, 0) == []
    assert mmr_select(None, v, rel, 0.5, -1) == []
    assert mmr_select(None, np.zeros((0, 3)), np.zeros(0), 0.5, 5) == []
    assert mmr_select(None, v, rel, 0.5, 10) == [2, 1, 0]  # top_n > n: all of them
    with pytest.raises(ValueError, match="lambda_"):
        mmr_select(None, v, rel, 1.5, 2)
    with pytest.raises(ValueError, match="finite"):
        mmr_select(None, v, np.array([1.0, np.nan, 0.0]), 0.5, 2)
    with pytest.raises(ValueError, match="relevance scores for"):
        mmr_select(None, v, np.array([1.0, 2.0]), 0.5, 2)


def test_identical_and_zero_vectors_fall_back_to_relevance_order():
    rel = np.array([0.2, 0.9, 0.5, 0.9])
    same = np.tile([0.3, 0.4], (4, 1))
    assert mmr_select(None, same, rel, 0.5, 4) == [1, 3, 2, 0]  # ties: lower index first
    assert mmr_select(None, np.zeros((4, 2)), rel, 0.5, 4) == [1, 3, 2, 0]


def test_lambda_zero_picks_for_diversity_after_the_most_relevant():
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    rel = np.array([1.0, 0.9, 0.1, 0.0])
    # after 0: index 3 has cos -1 (most different), then 2 (cos 0), then 1 (a copy of 0)
    assert mmr_select(None, v, rel, 0.0, 4) == [0, 3, 2, 1]


def test_equal_scores_mean_equal_relevance():
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert mmr_select(None, v, np.array([0.5, 0.5, 0.5]), 0.7, 3) == [0, 2, 1]


def test_apply_mmr_orders_picks_first_and_keeps_the_rest():
    cands = _scored([4.0, 3.9, 1.0, 2.0])
    v = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0], [0.7, 0.7]])
    out = apply_mmr(cands, v, None, 0.5, 2)
    assert [c.id for c in out] == [100, 102, 101, 103]
    assert [c.breakdown.get("mmr_rank") for c in out] == [1.0, 2.0, None, None]
    assert out[0].breakdown["fusion"] == 4.0 and out[0].score == 4.0
    assert out[2] is cands[1] and out[3] is cands[3]
    assert "mmr_rank" not in cands[0].breakdown  # inputs are not mutated


def test_apply_mmr_with_cosine_relevance_and_degenerate_cases():
    cands = _scored([0.0, 0.0, 0.0])
    v = np.array([[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    out = apply_mmr(cands, v, np.array([1.0, 0.0]), 1.0, 3, relevance="cosine")
    assert [c.id for c in out] == [101, 102, 100]
    assert apply_mmr([], np.zeros((0, 2)), None, 0.5, 3) == []
    assert apply_mmr(cands, v, None, 0.5, 0) == cands
    with pytest.raises(ValueError, match="candidates but vectors"):
        apply_mmr(cands, v[:2], None, 0.5, 3)
    with pytest.raises(ValueError, match="relevance must be"):
        apply_mmr(cands, v, None, 0.5, 3, relevance="bm25")  # type: ignore[arg-type]


# -- the pool and one relevance scale ----------------------------------------------------------


def _mixed_scale_list() -> tuple[list[ScoredChunk], np.ndarray]:
    """A reranked head of 4 (blended scores in [0, 1]) over a fused tail of 10 on another scale.

    Head 1 is a near-copy of head 0; everything else is orthogonal to everything.
    """
    head = [1.0, 2 / 3, 1 / 3, 0.0]
    tail = [-0.5 - 3 * i for i in range(10)]  # placed below the head, as rerank.tail_below does
    vecs = np.eye(16)[:14].copy()
    vecs[1] = vecs[0] + 0.05 * np.eye(16)[15]
    return _scored(head + tail), vecs


def test_a_mixed_scale_list_keeps_the_reranked_order_at_lambda_near_one():
    cands, vecs = _mixed_scale_list()
    out = apply_mmr(cands, vecs, None, 0.9, 4, pool=4)
    # pool of 4: rel [1, .67, .33, 0]; after 0, the near-copy scores .9 * .67 - .1 = .5 and beats .3
    assert [c.id for c in out] == [c.id for c in cands]
    # normalised over all 14, the head is squeezed into [.96, 1]: the near-copy (.79) falls behind
    # head 2 (.88), head 3 (.87) and even the first, never reranked, tail candidate (.85)
    mixed = apply_mmr(cands, vecs, None, 0.9, 4)
    assert [c.id for c in mixed][:4] == [100, 102, 103, 104]


def test_the_pool_bounds_the_picks_and_the_rest_keep_their_order():
    cands, vecs = _mixed_scale_list()
    out = apply_mmr(cands, vecs[:6], None, 0.0, 12, pool=6)  # rows past the pool are not needed
    assert {c.id for c in out[:6]} == {c.id for c in cands[:6]}
    assert [c.breakdown.get("mmr_rank") for c in out] == [float(r) for r in range(1, 7)] + [None] * 8
    assert out[6:] == cands[6:]
    assert apply_mmr(cands, vecs, None, 0.5, 3, pool=100)[0].id == 100  # a pool past the end: all
    with pytest.raises(ValueError, match="pool must be positive"):
        apply_mmr(cands, vecs, None, 0.5, 3, pool=0)
    with pytest.raises(ValueError, match="pooled candidates but vectors"):
        apply_mmr(cands, vecs[:3], None, 0.5, 3, pool=4)


@settings(max_examples=100, deadline=None)
@given(vectors, st.integers(1, 15), st.integers(1, 15))
def test_lambda_one_with_a_pool_is_relevance_order(data, pool, top_n):
    vecs, rel = data
    order = np.argsort(-rel, kind="stable")
    cands = [_scored(rel.tolist())[i] for i in order]  # sorted, as the pipeline hands them over
    out = apply_mmr(cands, vecs[order], None, 1.0, top_n, pool=pool)
    assert [c.id for c in out] == [c.id for c in cands]


class _Dense:
    def __init__(self, vecs: np.ndarray) -> None:
        self.vecs = vecs

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        return self.vecs[np.asarray(ids) - 100]


def _reranked(cands: list[ScoredChunk], head: int) -> list[ScoredChunk]:
    """The first ``head`` candidates marked as rerank.py marks the ones it scored."""
    return [
        replace(c, breakdown={**c.breakdown, "stub": c.score, "stub_rank": float(i + 1)}) if i < head else c
        for i, c in enumerate(cands)
    ]


def test_the_pipeline_pools_only_the_reranked_head():
    from types import SimpleNamespace

    from fake_settings import fake_settings
    from stage_retriever import stage_retriever

    from hybrid_rag.retrieval.retriever import Candidates

    settings = fake_settings(overrides={"mmr.pool": 40, "mmr.mmr_lambda": 0.9, "mmr.top_n": 4})
    cands, vecs = _mixed_scale_list()
    cands = _reranked(cands, 4)
    live = SimpleNamespace(dense=_Dense(vecs))
    retriever = stage_retriever(settings)
    after_rerank = retriever.diversify(cands, Candidates({}), live, reranked=True)  # type: ignore[arg-type]
    assert [c.id for c in after_rerank] == [c.id for c in cands]
    # a floor dropped head 2: the pool is the 3 reranked ones left, not 4 with a fused one
    floored = [c for c in cands if c.id != 102]
    out = retriever.diversify(floored, Candidates({}), live, reranked=True)  # type: ignore[arg-type]
    assert [c.id for c in out] == [c.id for c in floored]
    assert [c.breakdown.get("mmr_rank") for c in out[:4]] == [1.0, 2.0, 3.0, None]
    fused_only = retriever.diversify(cands, Candidates({}), live, reranked=False)  # type: ignore[arg-type]
    assert [c.id for c in fused_only][:4] == [100, 102, 103, 104]  # no rerank: the pool of 40 is all 14
