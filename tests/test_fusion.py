import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hybrid_rag.retrieval.fusion import (
    RRF_K,
    minmax_normalize,
    reciprocal_rank_fusion,
    single_list,
    weighted_fusion,
)
from hybrid_rag.types import Hit


def hits(*ids_scores):
    return [Hit(i, s) for i, s in ids_scores]


def test_rrf_matches_the_formula_with_ranks_from_one():
    runs = {"dense": hits((1, 0.9), (2, 0.8)), "bm25": hits((2, 7.0), (3, 5.0))}
    fused = {f.id: f.score for f in reciprocal_rank_fusion(runs)}
    assert fused[1] == pytest.approx(1 / (RRF_K + 1))
    assert fused[2] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert fused[3] == pytest.approx(1 / (RRF_K + 2))
    assert [f.id for f in reciprocal_rank_fusion(runs)] == [2, 1, 3]


def test_rrf_ties_break_by_chunk_id():
    runs = {"a": hits((9, 1.0)), "b": hits((4, 1.0))}
    assert [f.id for f in reciprocal_rank_fusion(runs)] == [4, 9]


ranked = st.lists(st.integers(0, 40), unique=True, max_size=15).map(
    lambda ids: [Hit(i, float(len(ids) - r)) for r, i in enumerate(ids)]
)


@given(st.dictionaries(st.sampled_from(["dense", "bm25", "hyde"]), ranked, min_size=1))
def test_fusion_does_not_depend_on_the_order_of_input_lists(runs):
    names = list(runs)
    expected_rrf = reciprocal_rank_fusion(runs)
    expected_w = weighted_fusion(runs, {n: 1.0 for n in names})
    for perm in itertools.permutations(names):
        shuffled = {n: runs[n] for n in perm}
        assert reciprocal_rank_fusion(shuffled) == expected_rrf
        assert weighted_fusion(shuffled, {n: 1.0 for n in names}) == expected_w


def test_weights_scale_each_lists_contribution():
    runs = {"dense": hits((1, 0.9), (2, 0.1)), "bm25": hits((2, 9.0), (1, 1.0))}
    dense_heavy = weighted_fusion(runs, {"dense": 0.9, "bm25": 0.1})
    bm25_heavy = weighted_fusion(runs, {"dense": 0.1, "bm25": 0.9})
    assert dense_heavy[0].id == 1 and bm25_heavy[0].id == 2
    rrf_dense = reciprocal_rank_fusion(runs, weights={"dense": 1.0, "bm25": 0.2})
    assert rrf_dense[0].id == 1


def test_minmax_degenerate_cases():
    assert minmax_normalize(np.array([])).size == 0
    assert minmax_normalize(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]
    assert minmax_normalize(np.array([1.0, 3.0, 2.0])).tolist() == [0.0, 1.0, 0.5]


def test_empty_inputs_give_empty_outputs():
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"dense": []}) == []
    assert weighted_fusion({"dense": [], "bm25": []}, {"dense": 1, "bm25": 1}) == []


def test_single_list_keeps_scores_and_sorts_ties_by_id():
    out = single_list(hits((5, 1.0), (2, 1.0), (7, 3.0)), "bm25")
    assert [(f.id, f.score) for f in out] == [(7, 3.0), (2, 1.0), (5, 1.0)]
