"""The dense and keyword index contracts, run against Milvus (milvus-lite in this process).

Dense: with the exact FLAT index, search equals a numpy brute force for MaxP windows and for one
pooled vector a chunk; with HNSW, recall@10 >= 0.95 on 2,000 vectors; allowed ids are a prefilter
that still gives k; ties break by id; score() equals search scores; add/remove/ids/contains;
reopening by name. Keyword: Milvus ranks as bm25s's lucene variant over the same terms (scores
(k1 + 1) times larger), filters before top-k, score() equals search scores, NaN for absent ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="the [milvus] extra (pymilvus, milvus-lite) is not installed")

from hybrid_rag.errors import CorruptIndexError, IndexMismatchError, RemoteServiceError
from hybrid_rag.indices.bm25 import BM25IndexManager
from hybrid_rag.indices.milvus import MilvusVectorIndex
from hybrid_rag.indices.milvus_bm25 import MilvusKeywordIndex
from hybrid_rag.indices.milvus_client import connect, encode_terms, forget_clients
from hybrid_rag.protocols import KeywordIndex, VectorIndex
from hybrid_rag.settings import BM25Settings, MilvusSettings

DIM = 24
MODEL = "test-model"
TEXTS = [
    "Faiss builds an exact inner product index over dense vectors.",
    "BM25 ranks documents by term frequency and inverse document frequency.",
    "The tokenizer splits identifiers such as getFileName into get, file and name.",
    "def get_file_name(path): return os.path.basename(path)",
    "Chunks are stored in SQLite with their document path and line numbers.",
    "The BM25 index is rebuilt whenever the corpus changes: e.g. c++ templates.",
    "Term frequency saturates: the tenth occurrence of a term adds little to the score.",
    "Document length normalisation penalises long documents in BM25.",
    "A query about file names should find getFileName and get_file_name.",
    "Stop words such as the and of are removed before indexing. Café crème.",
]
KW_IDS = np.arange(len(TEXTS), dtype=np.int64) * 7 + 3
QUERIES = ["document frequency", "get file name", "BM25 index", "c++ e.g.", "café", "sqlite path line"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    yield connect(MilvusSettings(uri="contract.db"), tmp_path_factory.mktemp("milvus"))
    forget_clients()


def _name() -> str:
    return "t_" + uuid.uuid4().hex[:12]


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _dense(client: object, scoring: str = "maxp", index_type: str = "FLAT") -> MilvusVectorIndex:
    settings = MilvusSettings(index_type=index_type)  # type: ignore[arg-type]
    return MilvusVectorIndex.create(
        client, _name(), settings, dimension=DIM, model_name=MODEL, scoring=scoring
    )


@pytest.fixture(scope="module")
def windows() -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """120 chunks under sparse ids, 1-4 windows each, and 8 queries."""
    rng = np.random.default_rng(11)
    ids = np.sort(rng.choice(10**6, size=120, replace=False)).astype(np.int64) + 1
    return ids, [_unit(rng, int(rng.integers(1, 5))) for _ in ids], _unit(rng, 8)


@pytest.fixture(scope="module")
def maxp(client: object, windows) -> MilvusVectorIndex:
    ids, mats, _ = windows
    index = _dense(client)
    index.add(ids[:70], mats[:70])
    index.add(ids[70:], mats[70:])
    return index


def _maxp_truth(
    ids: np.ndarray, mats: list[np.ndarray], q: np.ndarray, k: int
) -> tuple[list[int], np.ndarray]:
    best = np.array([float((m @ q).max()) for m in mats])
    order = np.lexsort((ids, -best))[:k]
    return ids[order].tolist(), best[order]


def test_both_indices_implement_the_protocols(client: object, maxp: MilvusVectorIndex) -> None:
    assert isinstance(maxp, VectorIndex) and maxp.dimension == DIM and len(maxp) == 120
    keyword = MilvusKeywordIndex.create(client, _name(), MilvusSettings(), BM25Settings(tokenizer="regex"))
    assert isinstance(keyword, KeywordIndex) and len(keyword) == 0


def test_flat_maxp_search_equals_brute_force(maxp: MilvusVectorIndex, windows) -> None:
    ids, mats, queries = windows
    for q in queries:
        want_ids, want_scores = _maxp_truth(ids, mats, q, 10)
        hits = maxp.search(q, 10)
        assert [h.id for h in hits] == want_ids
        np.testing.assert_allclose([h.score for h in hits], want_scores, rtol=1e-5, atol=1e-6)


def test_pooled_search_equals_brute_force(client: object, windows) -> None:
    ids, mats, queries = windows
    index = _dense(client, scoring="pooled")
    index.add(ids, mats)
    pooled = np.stack([m.mean(axis=0) / np.linalg.norm(m.mean(axis=0)) for m in mats])
    assert len(index) == 120 and np.allclose(index.vectors(ids[:5]), pooled[:5], atol=1e-6)
    for q in queries:
        order = np.lexsort((ids, -(pooled @ q)))[:10]
        assert [h.id for h in index.search(q, 10)] == ids[order].tolist()


def test_allowed_ids_are_a_prefilter_that_still_gives_k(maxp: MilvusVectorIndex, windows) -> None:
    ids, mats, queries = windows
    rows = np.random.default_rng(2).choice(len(ids), size=15, replace=False)
    allowed = np.concatenate([ids[rows], [-5, 10**9]])  # two ids the index does not hold
    for q in queries:
        want, _ = _maxp_truth(ids[rows], [mats[r] for r in rows], q, 10)
        assert [h.id for h in maxp.search(q, 10, allowed_ids=allowed)] == want
    assert maxp.search(queries[0], 10, allowed_ids=np.array([-5])) == []


def test_score_equals_the_search_scores_and_nan_when_absent(maxp: MilvusVectorIndex, windows) -> None:
    q = windows[2][3]
    hits = maxp.search(q, 8)
    asked = np.array([*[h.id for h in hits][::-1], 424242], dtype=np.int64)
    scores = maxp.score(q, asked)
    np.testing.assert_allclose(scores[:-1], [h.score for h in hits][::-1], rtol=1e-5, atol=1e-6)
    assert np.isnan(scores[-1])


def test_degenerate_cases_and_bad_input(client: object, maxp: MilvusVectorIndex, windows) -> None:
    ids, mats, queries = windows
    q = queries[0]
    assert maxp.search(q, 0) == [] and maxp.search(np.zeros(DIM, dtype=np.float32), 5) == []
    assert maxp.search(np.empty(0, dtype=np.float32), 5) == []
    assert maxp.search(q, 5, allowed_ids=np.empty(0, dtype=np.int64)) == []
    assert _dense(client).search(q, 5) == []
    with pytest.raises(ValueError, match="already in the index"):
        maxp.add(ids[:1], mats[:1])
    with pytest.raises(ValueError, match="dimension"):
        maxp.search(np.ones(DIM + 1, dtype=np.float32), 3)
    fresh = _dense(client)
    with pytest.raises(ValueError, match="duplicate ids"):
        fresh.add(np.array([1, 1]), mats[:2])
    with pytest.raises(ValueError, match="NaN"):
        fresh.add(np.array([1]), [np.full((1, DIM), np.nan, dtype=np.float32)])
    hits = maxp.search(q, 500)
    assert [h.id for h in hits] == _maxp_truth(ids, mats, q, 500)[0]  # everything, no padding


def test_ties_break_by_ascending_id(client: object) -> None:
    rng = np.random.default_rng(3)
    x = _unit(rng, 60)
    x[::3] = x[0]  # 20 identical vectors
    ids = rng.permutation(np.arange(1000, 1060)).astype(np.int64)
    index = _dense(client, scoring="pooled")
    index.add(ids, x)
    tied = np.sort(ids[::3])
    assert [h.id for h in index.search(x[0], 5)] == tied[:5].tolist()
    assert [h.id for h in index.search(x[0], 25)][:20] == tied.tolist()


def test_add_remove_ids_contains_and_windows(client: object, windows) -> None:
    ids, mats, queries = windows
    index = _dense(client)
    index.add(ids[:30], mats[:30])
    assert np.array_equal(index.ids(), ids[:30])
    assert index.contains(np.array([ids[3], 7, ids[29]])).tolist() == [True, False, True]
    np.testing.assert_allclose(index.windows(int(ids[4])), mats[4], atol=1e-7)
    assert index.remove(np.concatenate([ids[:10], ids[:3], [5]])) == 10
    assert len(index) == 20 and not index.contains(ids[:10]).any()
    assert [h.id for h in index.search(queries[0], 5)] == _maxp_truth(ids[10:30], mats[10:30], queries[0], 5)[
        0
    ]
    with pytest.raises(KeyError, match="not in the vector index"):
        index.vectors(ids[:2])


def test_hnsw_recall_at_10_on_2000_vectors(client: object) -> None:
    rng = np.random.default_rng(5)
    x, queries = _unit(rng, 2000), _unit(rng, 30)
    ids = np.arange(1, 2001, dtype=np.int64)
    index = _dense(client, scoring="pooled", index_type="HNSW")
    index.add(ids, x)
    found = [
        len(set(h.id for h in index.search(q, 10)) & set(ids[np.argsort(-(x @ q))[:10]])) for q in queries
    ]
    assert sum(found) / (10 * len(queries)) >= 0.95


def test_save_and_load_reopen_the_collection_by_name(
    client: object, maxp: MilvusVectorIndex, tmp_path: Path, windows
) -> None:
    q = windows[2][1]
    maxp.save(tmp_path / "v1")
    settings = MilvusSettings(index_type="FLAT")
    loaded = MilvusVectorIndex.load(tmp_path / "v1", client, settings, model_name=MODEL, dimension=DIM)
    assert len(loaded) == 120 and loaded.search(q, 10) == maxp.search(q, 10)
    with pytest.raises(IndexMismatchError, match="other-model|rebuild"):
        MilvusVectorIndex.load(tmp_path / "v1", client, settings, model_name="other-model", dimension=DIM)
    with pytest.raises(CorruptIndexError, match="is gone"):
        MilvusVectorIndex.open(client, "t_absent", settings, model_name=MODEL, dimension=DIM)


# -------------------------------------------------------------------------------- keyword index


@pytest.fixture(scope="module")
def keyword(client: object) -> MilvusKeywordIndex:
    index = MilvusKeywordIndex.create(client, _name(), MilvusSettings(), BM25Settings(tokenizer="regex"))
    index.build(KW_IDS, TEXTS)
    return index


def test_keyword_ranks_as_bm25s_lucene_over_the_same_terms(keyword: MilvusKeywordIndex) -> None:
    local = BM25IndexManager(BM25Settings(tokenizer="regex"))
    local.build(KW_IDS, TEXTS)
    k1 = local.settings.k1
    compared = 0
    for query in QUERIES:
        got, want = keyword.search(query, len(TEXTS)), local.search(query, len(TEXTS))
        assert [h.id for h in got] == [h.id for h in want], query
        np.testing.assert_allclose([h.score for h in got], [h.score * (k1 + 1) for h in want], rtol=1e-5)
        compared += len(got)
    assert compared >= 15


def test_keyword_filters_before_top_k_and_scores_exactly(keyword: MilvusKeywordIndex) -> None:
    everything = keyword.search("document frequency", 10)
    allowed = np.array([h.id for h in everything[-2:]] + [999])
    assert keyword.search("document frequency", 1, allowed_ids=allowed) == everything[-2:-1]
    asked = np.array([everything[1].id, KW_IDS[3], 999, everything[0].id])
    scores = keyword.score("document frequency", asked)
    np.testing.assert_allclose(scores[[0, 3]], [everything[1].score, everything[0].score], rtol=1e-6)
    assert scores[1] == 0.0 and np.isnan(scores[2])  # no query term; not held


def test_keyword_degenerate_cases_and_rebuild(client: object) -> None:
    index = MilvusKeywordIndex.create(client, _name(), MilvusSettings(), BM25Settings(tokenizer="regex"))
    assert index.search("anything", 5) == [] and np.isnan(index.score("x", np.array([1]))).all()
    index.build(np.array([5, 6]), ["alpha beta", "gamma"])
    assert index.search("", 5) == [] and index.search("alpha", 0) == [] and index.search("zeta", 5) == []
    assert index.search("alpha", 5, allowed_ids=np.empty(0, dtype=np.int64)) == []
    index.build(np.array([7]), ["gamma delta"])
    assert np.array_equal(index.ids(), [7]) and [h.id for h in index.search("gamma", 5)] == [7]
    with pytest.raises(ValueError, match="duplicate"):
        index.build(np.array([1, 1]), ["a", "b"])


def test_keyword_reopens_by_name_and_refuses_other_settings(
    keyword: MilvusKeywordIndex, client: object, tmp_path: Path
) -> None:
    keyword.save(tmp_path)
    settings = BM25Settings(tokenizer="regex")
    loaded = MilvusKeywordIndex.load(tmp_path, client, MilvusSettings(), settings)
    assert loaded.search("get file name", 3) == keyword.search("get file name", 3)
    with pytest.raises(IndexMismatchError, match="bm25.k1"):
        MilvusKeywordIndex.load(tmp_path, client, MilvusSettings(), BM25Settings(tokenizer="regex", k1=0.9))


def test_terms_are_encoded_one_to_one_for_the_standard_analyzer() -> None:
    terms = ["plain", "get_file_name", "e.g.", "c++", "café", "_private", "3.14", "x"]
    words = encode_terms(terms).split(" ")
    assert words[:2] == ["plain", "get_file_name"] and len(set(words)) == len(terms)
    assert all(w.replace("_", "a").isascii() and w.replace("_", "a").isalnum() for w in words)


def test_an_unreachable_server_is_one_line_naming_it(tmp_path: Path) -> None:
    settings = MilvusSettings(uri="http://127.0.0.1:9", timeout_seconds=2)
    with pytest.raises(
        RemoteServiceError, match=r"cannot reach Milvus at http://127\.0\.0\.1:9 \(milvus\.uri\)"
    ) as err:
        connect(settings, tmp_path)
    assert "\n" not in str(err.value)
