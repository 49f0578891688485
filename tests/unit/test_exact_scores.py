"""Exact scores for every fusion candidate, and fusion weights by source type.

Each index's ``score(probe, ids)`` gives what its ``search`` gives (NaN for an id it lacks);
``complete_runs`` + z-score fusion equals standardising the full score tables over the union of
the top-k lists; the retriever weighs a chunk by its own source type.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.indices.bm25 import BM25IndexManager, _BM25sBackend, postings_sorted
from hybrid_rag.indices.chroma import ChromaVectorIndex
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.multivector import WindowedVectorIndex
from hybrid_rag.retrieval.fusion import complete_runs, fuse_runs, zscore_normalize
from hybrid_rag.settings import BM25Settings, Settings
from hybrid_rag.types import Hit

DIM = 16


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("backend", [FaissVectorIndex, ChromaVectorIndex], ids=["faiss", "chroma"])
def test_dense_score_is_the_search_score_and_nan_for_unknown_ids(backend: type) -> None:
    rng = np.random.default_rng(0)
    ids = np.arange(10, 40, dtype=np.int64)
    index = backend(DIM, "m")
    index.add(ids, _unit(rng, len(ids)))
    query = _unit(rng, 1)[0]
    hits = index.search(query, len(ids))
    asked = np.array([*[h.id for h in hits][::-1], 999], dtype=np.int64)
    got = index.score(query, asked)
    np.testing.assert_allclose(got[:-1], [h.score for h in hits][::-1], rtol=1e-5, atol=1e-6)
    assert np.isnan(got[-1])
    assert index.score(query, np.array([], dtype=np.int64)).shape == (0,)


def test_windowed_score_is_the_best_window_as_search_ranks() -> None:
    rng = np.random.default_rng(1)
    index = WindowedVectorIndex.create(DIM, "m")
    ids = np.array([3, 7, 11, 12], dtype=np.int64)
    windows = [_unit(rng, n) for n in (1, 3, 2, 5)]
    index.add(ids, windows)
    query = _unit(rng, 1)[0]
    expected = {int(i): float((w @ query).max()) for i, w in zip(ids, windows, strict=True)}
    assert {h.id: pytest.approx(h.score, abs=1e-6) for h in index.search(query, 4)} == expected
    got = index.score(query, np.array([12, 3, 5, 7], dtype=np.int64))
    np.testing.assert_allclose(got[[0, 1, 3]], [expected[12], expected[3], expected[7]], rtol=1e-5)
    assert np.isnan(got[2])


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_bm25_score_is_the_search_score_zero_without_a_term_and_nan_for_unknown_ids(backend: str) -> None:
    texts = ["rotor wing flow", "heat shield flow", "boundary layer", "rotor rotor blade", "gamma ray"]
    settings = BM25Settings(backend=backend, variant="robertson", stopwords="none", tokenizer="regex")
    index = BM25IndexManager(settings)
    index.build(np.arange(100, 105, dtype=np.int64), texts)
    hits = {h.id: h.score for h in index.search("rotor flow", 10)}
    assert set(hits) == {100, 101, 103}
    got = index.score("rotor flow", np.array([103, 102, 100, 7, 101, 104], dtype=np.int64))
    np.testing.assert_allclose(got[[0, 2, 4]], [hits[103], hits[100], hits[101]])
    assert got[1] == 0.0 and got[5] == 0.0  # no query term: no match, as in search
    assert np.isnan(got[3])
    np.testing.assert_array_equal(index.score("unknownword", np.array([100, 101])), [0.0, 0.0])


@pytest.mark.parametrize(
    ("backend", "variant"),
    [("bm25s", v) for v in ("lucene", "robertson", "atire", "bm25l", "bm25+")]
    + [("rank_bm25", v) for v in ("robertson", "bm25l", "bm25+")],
)
def test_bm25_score_of_some_ids_equals_the_full_search_score_for_every_variant(
    backend: str, variant: str
) -> None:
    """``score`` reads only the asked ids' postings; it must give what ``search`` computed over
    the whole corpus (bit for bit with bm25s), repeated query terms and BM25L/BM25+ floors included."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 30)))) for _ in range(300)]
    settings = BM25Settings(backend=backend, variant=variant, stopwords="none", tokenizer="regex")
    index = BM25IndexManager(settings)
    ids = rng.permutation(np.arange(1000, 1300, dtype=np.int64))  # ids not in index order
    index.build(ids, texts)
    for query in ("w1 w2 w2 w2 w30", "w7", "w3 w5 w8 w13 w21 w34 w3 w5"):
        hits = index.search(query, 300)
        asked = np.array([h.id for h in hits], dtype=np.int64)[::-1]
        got = index.score(query, asked)
        expected = np.array([h.score for h in hits])[::-1]
        if backend == "bm25s":
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        unmatched = np.setdiff1d(ids, asked)
        np.testing.assert_array_equal(index.score(query, unmatched), np.zeros(len(unmatched)))


def test_postings_order_check_and_the_fallback_when_a_list_is_unsorted() -> None:
    indptr = np.array([0, 3, 3, 5])
    assert postings_sorted(np.array([1, 4, 9, 0, 2]), indptr)  # column 2 may start below column 0's end
    assert not postings_sorted(np.array([1, 9, 4, 0, 2]), indptr)
    assert postings_sorted(np.array([], dtype=np.int32), np.array([0, 0]))
    # the bm25s score matrix of versions written before segments (format 1), still loaded
    settings = BM25Settings(stopwords="none", tokenizer="regex")
    backend = _BM25sBackend.build([["a", "b"], ["b", "c"], ["a", "a", "c"], ["d"], ["b", "b", "a"]], settings)
    rows = np.array([4, 0, 3])
    expected = backend.scores_at(["a", "b"], rows)
    assert backend._postings_sorted is True  # what bm25s writes
    backend._postings_sorted = False  # as if bm25s wrote posting lists out of order
    for got, want in zip(backend.scores_at(["a", "b"], rows), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_complete_runs_equals_standardising_full_tables_over_the_union() -> None:
    rng = np.random.default_rng(7)
    for trial in range(20):
        n, k = 60, int(rng.integers(3, 15))
        dense = dict(enumerate(rng.uniform(0.1, 0.9, n).tolist()))
        bm25 = {i: (float(rng.exponential(3.0)) if rng.random() < 0.6 else 0.0) for i in range(n)}

        def top(table: dict[int, float], k: int = k) -> list[Hit]:
            ranked = sorted(((i, s) for i, s in table.items() if s > 0), key=lambda x: (-x[1], x[0]))
            return [Hit(i, s) for i, s in ranked[:k]]

        runs = {"dense": top(dense), "bm25": top(bm25)}
        scorers = {
            "dense": lambda ids, t=dense: np.array([t[int(i)] for i in ids]),
            "bm25": lambda ids, t=bm25: np.array([t[int(i)] for i in ids]),
        }
        w = float(rng.uniform(0.2, 0.9))
        fused = fuse_runs(runs, "zscore", {"dense": w, "bm25": 1 - w}, scorers=scorers)
        union = sorted({h.id for hits in runs.values() for h in hits})
        dz = zscore_normalize(np.array([dense[i] for i in union]))
        bz = zscore_normalize(np.array([bm25[i] for i in union]))
        expected = dict(zip(union, w * dz + (1 - w) * bz, strict=True))
        assert [f.id for f in fused] == sorted(union, key=lambda i: (-expected[i], i)), trial
        assert all(f.score == pytest.approx(expected[f.id]) for f in fused)


def test_complete_runs_keeps_unscorable_and_empty_lists_and_rrf_ignores_scorers() -> None:
    runs = {"dense": [Hit(1, 0.9), Hit(2, 0.5)], "bm25": [Hit(3, 4.0)], "prf_bm25": []}
    done = complete_runs(runs, {"dense": lambda ids: np.where(ids == 3, 0.2, np.nan), "prf_bm25": len})
    assert done["dense"] == [Hit(1, 0.9), Hit(2, 0.5), Hit(3, 0.2)]
    assert done["bm25"] == [Hit(3, 4.0)] and done["prf_bm25"] == []
    weights = {"dense": 1.0, "bm25": 1.0}
    plain = fuse_runs(runs, "rrf", weights)
    assert fuse_runs(runs, "rrf", weights, scorers={"dense": lambda ids: ids * 0.0}) == plain


def test_imputing_an_absent_chunk_as_average_misranks_what_exact_scores_fix() -> None:
    # dense ranks 1 > 2 > 3; chunk 4 is BM25's only hit and dense scores it far below chunk 3.
    # Counted as dense's *average* hit, 4 jumps over 3; with its real dense score it stays below.
    runs = {"dense": [Hit(1, 0.90), Hit(2, 0.60), Hit(3, 0.30)], "bm25": [Hit(4, 2.0), Hit(1, 1.0)]}
    weights = {"dense": 0.75, "bm25": 0.25}
    imputed = [f.id for f in fuse_runs(runs, "zscore", weights)]
    exact = [f.id for f in fuse_runs(runs, "zscore", weights, scorers={"dense": lambda ids: ids * 0.0})]
    assert imputed.index(4) < imputed.index(3)
    assert exact.index(4) > exact.index(3)


def test_fusion_weights_can_depend_on_the_chunk() -> None:
    runs = {"dense": [Hit(1, 0.9), Hit(2, 0.1)], "bm25": [Hit(2, 9.0), Hit(1, 1.0)]}
    by_id = {1: {"dense": 0.5, "bm25": 0.5}, 2: {"dense": 0.9, "bm25": 0.1}}
    fused = {f.id: f for f in fuse_runs(runs, "zscore", by_id.__getitem__)}
    assert fused[1].parts == pytest.approx({"dense": 0.5, "bm25": -0.5})
    assert fused[2].parts == pytest.approx({"dense": -0.9, "bm25": 0.1})


def test_settings_weights_by_source_type_and_refuse_a_zero_pair() -> None:
    r = Settings().retrieval
    assert r.exact_scores and r.fusion == "zscore"
    assert r.fusion_weights("text") == (r.dense_weight, r.bm25_weight) == (0.65, 0.35)
    assert r.fusion_weights("code") == (0.75, 0.25)
    with pytest.raises(Exception, match="code_dense_weight and retrieval.code_bm25_weight"):
        Settings().with_overrides({"retrieval.code_dense_weight": 0, "retrieval.code_bm25_weight": 0})


def _mixed_engine(tmp_path: Path, **overrides: object) -> Engine:
    corpus = tmp_path / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "guide.md").write_text("# Parsing\n\nHow to parse a config file and read its values.\n")
    (corpus / "parse.py").write_text("def parse_config(path):\n    return read_values(path)\n")
    (corpus / "notes.md").write_text("# Gardening\n\nTomatoes need sun and water every day.\n")
    settings = fake_settings(tmp_path / "data", {**overrides})
    engine = Engine(settings)
    engine.ingest([corpus])
    return engine


def test_retriever_gives_every_candidate_its_exact_scores_in_the_breakdown(tmp_path: Path) -> None:
    engine = _mixed_engine(tmp_path)
    try:
        result = engine.query("parse config file", top_k=10)
        stages = [t.stage for t in result.trace.timings]
        assert "exact_scores" in stages and stages.index("fetch") < stages.index("fuse")
        for c in result.chunks:  # every candidate has both lists' scores, found by both or not
            assert {"dense", "bm25"} <= set(c.breakdown), c.breakdown
        live = engine.indices.get()
        for c in result.chunks:
            assert c.breakdown["bm25"] == pytest.approx(live.bm25.score("parse config file", [c.id])[0])
    finally:
        engine.close()
    engine = _mixed_engine(tmp_path / "off", **{"retrieval.exact_scores": False})
    try:  # without: a chunk BM25 did not find has no BM25 score, and no stage computes one
        result = engine.query("parse config file", top_k=10)
        assert "exact_scores" not in [t.stage for t in result.trace.timings]
        assert any("bm25" not in c.breakdown for c in result.chunks)
    finally:
        engine.close()


def test_retriever_weighs_code_and_text_chunks_by_their_own_pair(tmp_path: Path) -> None:
    code_pair = {"retrieval.code_dense_weight": 1.0, "retrieval.code_bm25_weight": 0.0}
    engine = _mixed_engine(tmp_path, **code_pair)
    try:  # the two lists alone: expansion would add two more, at half their index's weight
        result = engine.query("parse config file", top_k=10, features={"expansion": False})
        assert {c.source_type.value for c in result.chunks} == {"code", "text"}
        for c in result.chunks:
            share = c.breakdown["fusion"]
            if c.source_type.value == "code":  # BM25 counts nothing for a code chunk
                assert share == pytest.approx(1.0 * _z(result, "dense", c.id))
            else:
                assert share == pytest.approx(
                    0.65 * _z(result, "dense", c.id) + 0.35 * _z(result, "bm25", c.id)
                )
    finally:
        engine.close()


def _z(result, name: str, chunk_id: int) -> float:
    """A chunk's standardised score in list ``name`` over every returned candidate."""
    ids = [c.id for c in result.chunks]
    values = zscore_normalize(np.array([c.breakdown[name] for c in result.chunks]))
    return float(values[ids.index(chunk_id)])
