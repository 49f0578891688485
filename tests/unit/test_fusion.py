import doctest
import itertools

import numpy as np
import pytest
from fake_settings import fake_settings
from hypothesis import given
from hypothesis import strategies as st

from hybrid_rag.errors import ConfigError
from hybrid_rag.retrieval import fusion
from hybrid_rag.retrieval.fusion import (
    RRF_K,
    FusionMode,
    fuse_runs,
    minmax_normalize,
    reciprocal_rank_fusion,
    single_list,
    weighted_fusion,
    zscore_fusion,
    zscore_normalize,
)
from hybrid_rag.settings import Settings
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


@given(st.dictionaries(st.sampled_from(["dense", "bm25", "hyde"]), ranked, min_size=1))
def test_zscore_fusion_and_fuse_runs_do_not_depend_on_the_order_of_input_lists(runs):
    weights = {"dense": 0.75, "bm25": 0.25, "hyde": 0.5}
    expected = zscore_fusion(runs, weights)
    expected_default = fuse_runs(runs, "zscore", weights)
    for perm in itertools.permutations(runs):
        shuffled = {n: list(runs[n]) for n in perm}
        assert zscore_fusion(shuffled, weights) == expected
        assert fuse_runs(shuffled, "zscore", weights) == expected_default


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


# -- z-score (ZMUV) fusion ---------------------------------------------------------------------


def test_zscore_normalize_gives_mean_zero_unit_spread_and_keeps_the_order():
    scores = np.array([9.0, 4.0, 3.5, 1.0])
    z = zscore_normalize(scores)
    assert z.mean() == pytest.approx(0.0, abs=1e-12)
    assert z.std() == pytest.approx(1.0)
    assert list(np.argsort(-z)) == [0, 1, 2, 3]
    assert zscore_normalize(np.array([3.0, 1.0])).tolist() == [1.0, -1.0]


def test_zscore_normalize_degenerate_cases():
    assert zscore_normalize(np.array([])).size == 0
    assert zscore_normalize(np.array([0.42])).tolist() == [1.0]  # one hit: above any absent chunk
    assert zscore_normalize(np.array([5.0, 5.0, 5.0])).tolist() == [1.0, 1.0, 1.0]
    assert zscore_normalize(np.array([1e9, 1e9 + 1e-6])).tolist() == [1.0, 1.0]  # float noise is no spread
    with pytest.raises(ValueError, match="NaN"):
        zscore_normalize(np.array([1.0, float("nan")]))
    with pytest.raises(ValueError, match="infinite"):
        zscore_normalize(np.array([1.0, float("inf")]))


def test_zscore_fusion_matches_the_formula_and_absent_adds_zero():
    runs = {"dense": hits((1, 0.9), (2, 0.5)), "bm25": hits((2, 12.0), (3, 8.0), (4, 4.0))}
    fused = {f.id: f for f in zscore_fusion(runs, {"dense": 0.75, "bm25": 0.25})}
    z_bm25 = np.array([12.0, 8.0, 4.0])
    z_bm25 = (z_bm25 - z_bm25.mean()) / z_bm25.std()
    assert fused[1].score == pytest.approx(0.75 * 1.0)
    assert fused[2].score == pytest.approx(0.75 * -1.0 + 0.25 * z_bm25[0])
    assert fused[3].score == pytest.approx(0.0)  # the BM25 list's mean, absent from dense
    assert fused[4].score == pytest.approx(0.25 * z_bm25[2])
    assert dict(fused[2].parts) == pytest.approx({"dense": -0.75, "bm25": 0.25 * z_bm25[0]})
    assert dict(fused[3].parts) == {"bm25": 0.0}


def test_zscore_fusion_keeps_a_confident_dense_winner_that_rrf_gives_away():
    """The CoSQA failure of equal-weight RRF: a clear dense first hit, a BM25 near-tie elsewhere."""
    runs = {
        "dense": hits((1, 0.80), (2, 0.62), (3, 0.60), (4, 0.58), (5, 0.57)),
        "bm25": hits((2, 5.1), (3, 5.0), (1, 4.9), (4, 1.9), (5, 1.8)),
    }
    assert reciprocal_rank_fusion(runs)[0].id == 2
    assert zscore_fusion(runs, {"dense": 0.75, "bm25": 0.25})[0].id == 1


def test_zscore_fusion_weights_decide_between_lists_that_disagree():
    runs = {"dense": hits((1, 0.9), (2, 0.1)), "bm25": hits((2, 9.0), (1, 1.0))}
    assert zscore_fusion(runs, {"dense": 0.75, "bm25": 0.25})[0].id == 1
    assert zscore_fusion(runs, {"dense": 0.25, "bm25": 0.75})[0].id == 2
    only_dense = zscore_fusion(runs, {"dense": 1.0})  # a run missing from weights counts 0
    assert [f.id for f in only_dense] == [1, 2]


@given(
    ranked,
    ranked,
    st.floats(0.01, 1000.0),
    st.floats(-1000.0, 1000.0),
)
def test_zscore_fusion_is_invariant_to_each_lists_scale_and_offset(dense, bm25, scale, shift):
    runs = {"dense": dense, "bm25": bm25}
    moved = {"dense": dense, "bm25": [Hit(h.id, scale * h.score + shift) for h in bm25]}
    weights = {"dense": 0.75, "bm25": 0.25}
    before = {f.id: f.score for f in zscore_fusion(runs, weights)}
    after = {f.id: f.score for f in zscore_fusion(moved, weights)}
    assert after == pytest.approx(before, abs=1e-9)


def test_zscore_fusion_degenerate_inputs():
    weights = {"dense": 0.75, "bm25": 0.25}
    assert zscore_fusion({}, weights) == []
    assert zscore_fusion({"dense": [], "bm25": []}, weights) == []
    one = zscore_fusion({"dense": hits((7, 0.3)), "bm25": []}, weights)
    assert [(f.id, f.score) for f in one] == [(7, 0.75)]
    flat = zscore_fusion({"dense": hits((9, 0.5), (4, 0.5)), "bm25": []}, weights)
    assert [(f.id, f.score) for f in flat] == [(4, 0.75), (9, 0.75)]  # all equal: ties by id
    alone = zscore_fusion({"dense": hits((3, 0.9), (1, 0.2), (2, 0.5))}, weights)
    assert [f.id for f in alone] == [3, 2, 1]


# -- fuse_runs: the dispatcher the retriever calls ----------------------------------------------


def test_fuse_runs_dispatches_on_the_mode():
    runs = {"dense": hits((1, 0.9), (2, 0.5), (3, 0.1)), "bm25": hits((3, 9.0), (2, 8.0))}
    weights = {"dense": 1.0, "bm25": 1 / 3}
    assert fuse_runs(runs, "zscore", weights) == zscore_fusion(runs, weights)
    assert fuse_runs(runs, FusionMode.ZSCORE, weights) == zscore_fusion(runs, weights)
    assert fuse_runs(runs, "weighted", weights) == weighted_fusion(runs, weights)
    assert fuse_runs(runs, "rrf", weights, k=5) == reciprocal_rank_fusion(runs, k=5, weights=weights)
    assert fuse_runs(runs, "rrf", weights, k=5) != fuse_runs(runs, "rrf", weights)


def test_fuse_runs_passes_one_list_through_with_its_raw_scores():
    out = fuse_runs({"bm25": hits((5, 1.0), (7, 3.0))}, "zscore", {"dense": 0.75, "bm25": 0.0})
    assert [(f.id, f.score) for f in out] == [(7, 3.0), (5, 1.0)]
    assert fuse_runs({}, "zscore", {}) == []


def test_fuse_runs_refuses_all_zero_weights_and_unknown_modes():
    runs = {"dense": hits((1, 0.9)), "bm25": hits((2, 3.0))}
    with pytest.raises(ConfigError, match="every fusion weight is zero"):
        fuse_runs(runs, "zscore", {"dense": 0.0, "bm25": 0.0})
    with pytest.raises(ConfigError, match="zscore"):
        fuse_runs(runs, "average", {"dense": 1.0, "bm25": 1.0})


def test_settings_default_to_zscore_and_refuse_two_zero_weights():
    r = Settings().retrieval
    assert (r.fusion, r.dense_weight, r.bm25_weight) == ("zscore", 0.65, 0.35)
    with pytest.raises(ConfigError, match="must not both be 0"):
        Settings().with_overrides({"retrieval.dense_weight": 0, "retrieval.bm25_weight": 0.0})


def test_module_examples_hold():
    assert doctest.testmod(fusion).failed == 0


def test_engine_rrf_with_equal_weights_is_plain_rrf(tmp_path) -> None:
    """``retrieval.fusion: rrf`` with equal weights scores exactly sum 1 / (60 + rank)."""
    from hybrid_rag.engine import Engine
    from hybrid_rag.settings import load_settings

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(["soil drainage and clay", "clay pots for plants", "drainage pipes in soil"]):
        (docs / f"d{i}.md").write_text(f"# note {i}\n\n{text}\n")
    settings = fake_settings(
        base=load_settings(data_dir=tmp_path / "data", environ={}),
        overrides={
            "retrieval.fusion": "rrf",
            "retrieval.dense_weight": 0.5,
            "retrieval.bm25_weight": 0.5,
            "features.expansion": False,
        },
    )
    engine = Engine(settings)
    engine.ingest([docs])
    result = engine.query("soil drainage clay")
    assert result.chunks
    for c in result.chunks:
        expected = sum(
            1.0 / (60 + c.breakdown[f"{run}_rank"])
            for run in ("dense", "bm25")
            if f"{run}_rank" in c.breakdown
        )
        assert c.score == pytest.approx(expected, rel=1e-12)
    engine.close()
