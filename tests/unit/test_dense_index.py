"""FaissVectorIndex: equal to a numpy brute force, filtered search, ties, persistence, corruption."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import CorruptIndexError, IndexMismatchError
from hybrid_rag.indices.dense import INDEX_FILE, MANIFEST_FILE, FaissVectorIndex
from hybrid_rag.indices.files import file_sha256
from hybrid_rag.protocols import VectorIndex
from hybrid_rag.types import Hit

DIM = 32
MODEL = "test-model"


def _unit_rows(rng: np.random.Generator, n: int, d: int = DIM) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _brute_force(ids: np.ndarray, x: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    order = np.argsort(-(x @ q), kind="stable")[:k]
    return ids[order].tolist()


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    ids = np.sort(rng.choice(10**9, size=1000, replace=False)).astype(np.int64) + 2**40  # sparse, large
    return ids, _unit_rows(rng, 1000), _unit_rows(rng, 20)


@pytest.fixture
def index(data: tuple[np.ndarray, np.ndarray, np.ndarray]) -> FaissVectorIndex:
    ids, x, _ = data
    idx = FaissVectorIndex(DIM, MODEL)
    idx.add(ids[:600], x[:600])
    idx.add(ids[600:], x[600:])
    return idx


def test_implements_the_protocol(index: FaissVectorIndex) -> None:
    assert isinstance(index, VectorIndex)
    assert index.dimension == DIM and index.model_name == MODEL


def test_search_equals_brute_force(index: FaissVectorIndex, data) -> None:
    ids, x, queries = data
    for q in queries:
        hits = index.search(q, 10)
        assert [h.id for h in hits] == _brute_force(ids, x, q, 10)
        np.testing.assert_allclose([h.score for h in hits], np.sort(x @ q)[::-1][:10], rtol=1e-5, atol=1e-6)


def test_search_after_removals_equals_brute_force(index: FaissVectorIndex, data) -> None:
    ids, x, queries = data
    rng = np.random.default_rng(1)
    gone = rng.choice(ids, size=300, replace=False)
    unknown = np.array([1, 2, 3], dtype=np.int64)
    assert index.remove(np.concatenate([gone, gone[:10], unknown])) == 300
    assert index.remove(gone) == 0
    assert len(index) == 700
    keep = ~np.isin(ids, gone)
    assert np.array_equal(np.sort(index.ids()), ids[keep])
    for q in queries:
        assert [h.id for h in index.search(q, 15)] == _brute_force(ids[keep], x[keep], q, 15)
    np.testing.assert_array_equal(index.vectors(ids[keep][::7]), x[keep][::7])  # id map rebuilt
    with pytest.raises(KeyError):
        index.vector(int(gone[0]))


def test_allowed_ids_still_give_k_results(index: FaissVectorIndex, data) -> None:
    ids, x, queries = data
    rng = np.random.default_rng(2)
    allowed = rng.choice(ids, size=15, replace=False)
    rows = np.isin(ids, allowed)
    for q in queries:
        hits = index.search(q, 10, allowed_ids=allowed)
        assert len(hits) == 10
        assert [h.id for h in hits] == _brute_force(ids[rows], x[rows], q, 10)


def test_allowed_ids_fewer_than_k_and_unknown_ids(index: FaissVectorIndex, data) -> None:
    ids, x, queries = data
    allowed = np.concatenate([ids[[5, 50, 500]], [-7, 123]])  # two ids that are not in the index
    hits = index.search(queries[0], 10, allowed_ids=allowed)
    assert sorted(h.id for h in hits) == sorted(ids[[5, 50, 500]].tolist())
    assert [h.id for h in hits] == _brute_force(ids[[5, 50, 500]], x[[5, 50, 500]], queries[0], 10)


def test_k_larger_than_the_index_returns_everything_without_padding(data) -> None:
    ids, x, queries = data
    idx = FaissVectorIndex(DIM, MODEL)
    idx.add(ids[:7], x[:7])
    hits = idx.search(queries[0], 100)
    assert len(hits) == 7 and all(h.id != -1 for h in hits)


def test_degenerate_cases_give_empty_results(index: FaissVectorIndex, data) -> None:
    _, _, queries = data
    q = queries[0]
    assert index.search(q, 0) == []
    assert index.search(q, -3) == []
    assert index.search(np.empty(0, dtype=np.float32), 5) == []
    assert index.search(np.zeros(DIM, dtype=np.float32), 5) == []
    assert index.search(q, 5, allowed_ids=np.empty(0, dtype=np.int64)) == []
    assert FaissVectorIndex(DIM, MODEL).search(q, 5) == []


def test_ties_break_by_ascending_id() -> None:
    rng = np.random.default_rng(3)
    x = _unit_rows(rng, 100)
    x[::3] = x[0]  # 34 identical rows: the best match for a query equal to them
    ids = rng.permutation(np.arange(1000, 1100)).astype(np.int64)
    idx = FaissVectorIndex(DIM, MODEL)
    idx.add(ids, x)
    tied = np.sort(ids[::3])
    assert [h.id for h in idx.search(x[0], 5)] == tied[:5].tolist()
    assert [h.id for h in idx.search(x[0], 40)][:34] == tied.tolist()
    allowed = ids[::3][::2]
    assert [h.id for h in idx.search(x[0], 4, allowed_ids=allowed)] == np.sort(allowed)[:4].tolist()


def test_add_rejects_bad_input(index: FaissVectorIndex, data) -> None:
    ids, x, _ = data
    with pytest.raises(ValueError, match="already in the index"):
        index.add(ids[3:5], x[3:5])
    idx = FaissVectorIndex(DIM, MODEL)
    with pytest.raises(ValueError, match="duplicate ids"):
        idx.add(np.array([1, 2, 1]), x[:3])
    with pytest.raises(ValueError, match="shape"):
        idx.add(np.array([1]), x[:1, :10])
    with pytest.raises(ValueError, match="ids for"):
        idx.add(np.array([1, 2]), x[:3])
    bad = x[:1].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        idx.add(np.array([1]), bad)
    with pytest.raises(ValueError, match="dimension"):
        index.search(np.ones(DIM + 1, dtype=np.float32), 3)
    assert len(idx) == 0
    idx.add(np.empty(0, dtype=np.int64), np.empty((0, DIM), dtype=np.float32))
    assert len(idx) == 0


def test_vectors_are_reconstructed_by_id(index: FaissVectorIndex, data) -> None:
    ids, x, _ = data
    np.testing.assert_array_equal(index.vector(int(ids[42])), x[42])
    np.testing.assert_array_equal(index.vectors(ids[[9, 3, 700]]), x[[9, 3, 700]])
    assert index.vectors(np.empty(0, dtype=np.int64)).shape == (0, DIM)
    with pytest.raises(KeyError, match="not in the vector index"):
        index.vectors(np.array([ids[0], 5]))
    assert index.ids().dtype == np.int64


def test_contains_follows_adds_and_removals(index: FaissVectorIndex, data) -> None:
    """``contains`` answers from a sorted copy of the ids; every add and remove must renew it."""
    ids, x, _ = data
    probe = np.array([ids[5], 7, ids[900], ids[5]], dtype=np.int64)
    np.testing.assert_array_equal(index.contains(probe), [True, False, True, True])
    index.remove(ids[[5]])
    np.testing.assert_array_equal(index.contains(probe), [False, False, True, False])
    index.add(np.array([7], dtype=np.int64), x[:1])
    np.testing.assert_array_equal(index.contains(probe), [False, True, True, False])
    assert np.isnan(index.score(x[0], ids[[5]])[0]) and index.vectors(np.array([7]))[0] == pytest.approx(x[0])
    assert FaissVectorIndex(DIM, MODEL).contains(probe).tolist() == [False] * 4


def test_save_load_round_trip(tmp_path: Path, index: FaissVectorIndex, data) -> None:
    _, _, queries = data
    index.save(tmp_path / "new" / "dir")
    loaded = FaissVectorIndex.load(tmp_path / "new" / "dir", model_name=MODEL, dimension=DIM)
    assert len(loaded) == len(index)
    assert np.array_equal(loaded.ids(), index.ids())
    allowed = index.ids()[::50]
    for q in queries[:5]:
        assert loaded.search(q, 10) == index.search(q, 10)
        assert loaded.search(q, 10, allowed) == index.search(q, 10, allowed)
    manifest = json.loads((tmp_path / "new" / "dir" / MANIFEST_FILE).read_text())
    assert manifest == {
        "format_version": 1,
        "kind": "faiss-flat-ip",
        "model_name": MODEL,
        "dimension": DIM,
        "count": 1000,
        "sha256": file_sha256(tmp_path / "new" / "dir" / INDEX_FILE),
    }
    assert sorted(p.name for p in (tmp_path / "new" / "dir").iterdir()) == [INDEX_FILE, MANIFEST_FILE]


def test_save_overwrites_and_an_empty_index_round_trips(tmp_path: Path, index: FaissVectorIndex) -> None:
    index.save(tmp_path)
    FaissVectorIndex(DIM, MODEL).save(tmp_path)
    loaded = FaissVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)
    assert len(loaded) == 0 and loaded.search(np.ones(DIM, dtype=np.float32), 3) == []


@pytest.mark.parametrize(
    ("model", "dim", "expected"),
    [
        ("other-model", DIM, rf"built with model {MODEL} \(dim {DIM}\); the config says model other-model"),
        (MODEL, 768, rf"\(dim {DIM}\); the config says model {MODEL} \(dim 768\): run `hybrid-rag rebuild`"),
    ],
)
def test_load_refuses_another_model_or_dimension(
    tmp_path: Path, index: FaissVectorIndex, model: str, dim: int, expected: str
) -> None:
    index.save(tmp_path)
    with pytest.raises(IndexMismatchError, match=expected):
        FaissVectorIndex.load(tmp_path, model_name=model, dimension=dim)


def test_truncated_file_is_detected(tmp_path: Path, index: FaissVectorIndex) -> None:
    index.save(tmp_path)
    path = tmp_path / INDEX_FILE
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CorruptIndexError, match=r"fails its checksum: .*dense\.faiss"):
        FaissVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)


def test_flipped_byte_is_detected(tmp_path: Path, index: FaissVectorIndex) -> None:
    index.save(tmp_path)
    path = tmp_path / INDEX_FILE
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptIndexError, match=r"fails its checksum: .*dense\.faiss"):
        FaissVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)


def test_unreadable_file_with_a_matching_checksum_is_reported(
    tmp_path: Path, index: FaissVectorIndex
) -> None:
    index.save(tmp_path)
    path = tmp_path / INDEX_FILE
    path.write_bytes(path.read_bytes()[:100])
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    manifest["sha256"] = file_sha256(path)
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match=r"faiss cannot read .*dense\.faiss"):
        FaissVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)


def test_missing_or_broken_files_are_reported(tmp_path: Path, index: FaissVectorIndex) -> None:
    index.save(tmp_path)
    (tmp_path / INDEX_FILE).unlink()
    with pytest.raises(CorruptIndexError, match=r"vector index file missing: .*dense\.faiss"):
        FaissVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)
    (tmp_path / MANIFEST_FILE).write_text("{not json")
    with pytest.raises(CorruptIndexError, match=r"manifest unreadable: .*dense\.json"):
        FaissVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)
    (tmp_path / MANIFEST_FILE).unlink()
    with pytest.raises(CorruptIndexError, match=r"manifest missing: .*dense\.json"):
        FaissVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)


def test_hits_are_plain_hits(index: FaissVectorIndex, data) -> None:
    hit = index.search(data[2][0], 1)[0]
    assert isinstance(hit, Hit) and isinstance(hit.id, int) and isinstance(hit.score, float)
