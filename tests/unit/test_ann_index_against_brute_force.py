"""HNSW and IVF behind the VectorIndex protocol: recall against a numpy brute force, filters that
still give k results, removals, save and load as the kind written, and MaxP windows over them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.ann import AnnBackend, AnnParams, AnnVectorIndex, ivf_lists
from hybrid_rag.indices.multivector import WindowedVectorIndex
from hybrid_rag.protocols import VectorIndex

DIM = 32
KINDS = ("hnsw", "ivf")
RECALL_BOUND = 0.9  # recall@10 of the default search parameters on the clustered set below


def _clustered(n: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 40 centres: like embeddings, unlike uniform noise (where every ANN fails)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIM))
    rows = centres[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _index(kind: str, n: int = 3000, **params: int) -> tuple[AnnVectorIndex, np.ndarray, np.ndarray]:
    vectors = _clustered(n)
    ids = np.arange(10, 10 + 3 * n, 3, dtype=np.int64)  # sparse ids, as chunk ids are
    index = AnnVectorIndex(DIM, "m", AnnParams(kind=kind, exact_filter_max=100, **params))
    index.add(ids, vectors)
    return index, ids, vectors


def _brute(ids: np.ndarray, vectors: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = vectors @ query
    order = np.lexsort((ids, -scores))[:k]
    return ids[order].tolist()


@pytest.mark.parametrize("kind", KINDS)
def test_recall_at_10_against_numpy_brute_force(kind: str) -> None:
    index, ids, vectors = _index(kind)
    assert isinstance(index, VectorIndex)
    queries = _clustered(50, seed=1)
    recall = []
    for q in queries:
        hits = index.search(q, 10)
        assert len(hits) == 10 and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        exact = _brute(ids, vectors, q, 10)
        recall.append(len({h.id for h in hits} & set(exact)) / 10)
        got = np.array([h.id for h in hits])
        np.testing.assert_allclose([h.score for h in hits], index.score(q, got), rtol=1e-5)  # exact scores
    assert np.mean(recall) >= RECALL_BOUND


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("allowed_share", [0.01, 0.3])
def test_filters_give_k_results_whenever_k_match(kind: str, allowed_share: float) -> None:
    index, ids, vectors = _index(kind)
    rng = np.random.default_rng(2)
    allowed = np.sort(rng.choice(ids, int(len(ids) * allowed_share), replace=False))
    for q in _clustered(10, seed=3):
        hits = index.search(q, 10, allowed_ids=allowed)
        assert len(hits) == 10 and set(h.id for h in hits) <= set(allowed.tolist())
        if allowed_share < 0.05:  # few enough to be searched exactly
            keep = np.isin(ids, allowed)
            assert [h.id for h in hits] == _brute(ids[keep], vectors[keep], q, 10)
    few = allowed[:3]
    assert {h.id for h in index.search(vectors[0], 10, allowed_ids=few)} == set(few.tolist())
    assert index.search(vectors[0], 10, allowed_ids=np.array([], dtype=np.int64)) == []
    assert index.search(vectors[0], 10, allowed_ids=np.array([1, 2])) == []  # ids it does not hold


@pytest.mark.parametrize("kind", KINDS)
def test_removed_ids_never_come_back(kind: str) -> None:
    index, ids, vectors = _index(kind, n=600)
    gone = ids[:150]  # a quarter: past the HNSW rebuild share
    assert index.remove(gone) == 150 and index.remove(gone) == 0
    assert len(index) == 450
    for q in vectors[:20]:
        hits = index.search(q, 10)
        assert len(hits) == 10 and not set(h.id for h in hits) & set(gone.tolist())
    index.add(gone[:5], vectors[:5])  # an id can come back after removal
    assert index.search(vectors[0], 1)[0].id == gone[0]


@pytest.mark.parametrize("kind", KINDS)
def test_degenerate_queries_answer_as_exact_search(kind: str) -> None:
    index, _, vectors = _index(kind, n=200)
    assert index.search(np.zeros(DIM), 5) == []
    assert index.search(vectors[0], 0) == []
    assert len(index.search(vectors[0], 500)) == 200
    with pytest.raises(ValueError, match="dimension"):
        index.search(np.ones(DIM + 1), 5)
    empty = AnnVectorIndex(DIM, "m", AnnParams(kind=kind))
    assert empty.search(vectors[0], 5) == [] and len(empty) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_keep_the_kind_and_results(tmp_path: Path, kind: str) -> None:
    index, ids, vectors = _index(kind, n=800)
    index.remove(ids[:10])
    index.save(tmp_path)
    other = "ivf" if kind == "hnsw" else "hnsw"
    loaded = AnnBackend(AnnParams(kind=other)).load(tmp_path, model_name="m", dimension=DIM)
    assert loaded.kind == kind  # the kind written, whatever the settings say now
    for q in vectors[:10]:
        assert loaded.search(q, 10) == index.search(q, 10)
    (tmp_path / "ann.faiss").write_bytes(b"garbage")
    with pytest.raises(CorruptIndexError, match="checksum"):
        AnnVectorIndex.load(tmp_path, model_name="m", dimension=DIM, params=AnnParams(kind=kind))


@pytest.mark.parametrize("kind", KINDS)
def test_maxp_windows_over_an_approximate_index(tmp_path: Path, kind: str) -> None:
    vectors = _clustered(900)
    windowed = WindowedVectorIndex.create(DIM, "m", AnnBackend(AnnParams(kind=kind)))
    windowed.add(np.arange(1, 301), [vectors[3 * i : 3 * i + 3] for i in range(300)])
    q = vectors[10]  # window 1 of chunk 4
    assert windowed.search(q, 1)[0].id == 4
    hits = windowed.search(q, 5, allowed_ids=np.array([7, 8, 9]))
    assert {h.id for h in hits} == {7, 8, 9}
    windowed.save(tmp_path)
    backend = AnnBackend(AnnParams())
    loaded = WindowedVectorIndex.load(tmp_path, model_name="m", dimension=DIM, backend=backend)
    assert loaded.inner.kind == kind and loaded.search(q, 3) == windowed.search(q, 3)


def test_ivf_list_count() -> None:
    assert ivf_lists(1) == 1 and ivf_lists(10_000) == 256 and ivf_lists(1_000_000) == 4000
    assert ivf_lists(1000, wanted=500) == 25  # at most n / 39 training points a list
