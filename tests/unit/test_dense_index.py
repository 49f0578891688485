"""FaissVectorIndex beyond the shared contract (``tests/conformance/test_vector_index_contract.py``):
the id map after removals, vectors by id, the manifest, checksums and damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.dense import INDEX_FILE, MANIFEST_FILE, FaissVectorIndex
from hybrid_rag.indices.files import file_sha256

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


def test_vectors_are_reconstructed_by_id(index: FaissVectorIndex, data) -> None:
    ids, x, _ = data
    np.testing.assert_array_equal(index.vector(int(ids[42])), x[42])
    np.testing.assert_array_equal(index.vectors(ids[[9, 3, 700]]), x[[9, 3, 700]])
    assert index.vectors(np.empty(0, dtype=np.int64)).shape == (0, DIM)
    with pytest.raises(KeyError, match="not in the vector index"):
        index.vectors(np.array([ids[0], 5]))
    assert index.ids().dtype == np.int64


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
