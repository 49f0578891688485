"""Faiss and Chroma files (manifests, checksums, damage), then Chroma's own: HNSW recall@10 >= 0.95
on 2,000 vectors, filtered HNSW, the exact-scan fallback, loads that never touch the saved files.

The behaviour every dense index shares (brute force, prefilter, ties, degenerate cases, bad input,
round trips) is ``tests/conformance/test_vector_index_contract.py``.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices import chroma as chroma_module
from hybrid_rag.indices.chroma import DATA_DIR, HNSW, ChromaVectorIndex, tree_sha256
from hybrid_rag.indices.dense import INDEX_FILE, FaissVectorIndex
from hybrid_rag.indices.files import file_sha256
from hybrid_rag.types import Hit

DIM = 32
MODEL = "test-model"
Backend = type[FaissVectorIndex] | type[ChromaVectorIndex]


def _unit_rows(rng: np.random.Generator, n: int, d: int = DIM) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _brute_force(ids: np.ndarray, x: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    order = np.argsort(-(x @ q), kind="stable")[:k]
    return ids[order].tolist()


@pytest.fixture(params=[FaissVectorIndex, ChromaVectorIndex], ids=["faiss", "chroma"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.param


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """300 unit vectors under sparse, large ids, and 20 queries: small enough for HNSW to be exact."""
    rng = np.random.default_rng(7)
    ids = np.sort(rng.choice(10**9, size=300, replace=False)).astype(np.int64) + 2**40
    return ids, _unit_rows(rng, 300), _unit_rows(rng, 20)


@pytest.fixture
def index(backend: Backend, data) -> FaissVectorIndex | ChromaVectorIndex:
    ids, x, _ = data
    idx = backend(DIM, MODEL)
    idx.add(ids[:200], x[:200])
    idx.add(ids[200:], x[200:])
    return idx


def _payload(backend: Backend, directory: Path) -> Path:
    """The file whose damage a load must detect: the Faiss index, or Chroma's SQLite database."""
    if backend is FaissVectorIndex:
        return directory / INDEX_FILE
    return directory / DATA_DIR / "chroma.sqlite3"


def _manifest(backend: Backend, directory: Path) -> Path:
    return directory / ("dense.json" if backend is FaissVectorIndex else "chroma.json")


# ----------------------------------------------------------------------------- both backends' files


def test_float_ids_and_a_zero_dimension_are_refused(backend: Backend, data) -> None:
    idx = backend(DIM, MODEL)
    with pytest.raises(ValueError, match="must be integers"):
        idx.add(np.array([1.5]), data[1][:1])
    with pytest.raises(ValueError, match="dimension must be positive"):
        backend(0, MODEL)


def test_vectors_are_returned_by_id(index, data) -> None:
    ids, x, _ = data
    np.testing.assert_array_equal(index.vector(int(ids[42])), x[42])
    np.testing.assert_array_equal(index.vectors(ids[[9, 3, 200, 9]]), x[[9, 3, 200, 9]])
    assert index.vectors(np.empty(0, dtype=np.int64)).shape == (0, DIM)
    with pytest.raises(KeyError, match="not in the vector index"):
        index.vectors(np.array([ids[0], 5]))
    assert index.ids().dtype == np.int64


def test_save_load_round_trip(backend: Backend, tmp_path: Path, index, data) -> None:
    queries = data[2]
    target = tmp_path / "new" / "dir"
    index.save(target)
    loaded = backend.load(target, model_name=MODEL, dimension=DIM)
    assert len(loaded) == len(index) and np.array_equal(loaded.ids(), index.ids())
    allowed = index.ids()[::20]
    for q in queries[:5]:
        assert loaded.search(q, 10) == index.search(q, 10)
        assert loaded.search(q, 10, allowed) == index.search(q, 10, allowed)
    manifest = json.loads(_manifest(backend, target).read_text())
    assert (manifest["model_name"], manifest["dimension"], manifest["count"]) == (MODEL, DIM, 300)


def test_save_overwrites_and_an_empty_index_round_trips(backend: Backend, tmp_path: Path, index) -> None:
    index.save(tmp_path)
    backend(DIM, MODEL).save(tmp_path)
    loaded = backend.load(tmp_path, model_name=MODEL, dimension=DIM)
    assert len(loaded) == 0 and loaded.search(np.ones(DIM, dtype=np.float32), 3) == []
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary leftovers


def test_truncated_or_flipped_files_fail_the_checksum(backend: Backend, tmp_path: Path, index) -> None:
    index.save(tmp_path)
    path = _payload(backend, tmp_path)
    original = path.read_bytes()
    path.write_bytes(original[: len(original) // 2])
    with pytest.raises(CorruptIndexError, match=r"fails? (its|their) checksum"):
        backend.load(tmp_path, model_name=MODEL, dimension=DIM)
    flipped = bytearray(original)
    flipped[len(flipped) // 2] ^= 0x01
    path.write_bytes(bytes(flipped))
    with pytest.raises(CorruptIndexError, match=r"fails? (its|their) checksum"):
        backend.load(tmp_path, model_name=MODEL, dimension=DIM)


def test_unreadable_files_with_a_matching_checksum_are_reported(
    backend: Backend, tmp_path: Path, index
) -> None:
    index.save(tmp_path)
    path = _payload(backend, tmp_path)
    path.write_bytes(path.read_bytes()[:100])
    manifest_path = _manifest(backend, tmp_path)
    manifest = json.loads(manifest_path.read_text())
    is_faiss = backend is FaissVectorIndex
    manifest["sha256"] = file_sha256(path) if is_faiss else tree_sha256(tmp_path / DATA_DIR)
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match="faiss cannot read" if is_faiss else "chroma cannot read"):
        backend.load(tmp_path, model_name=MODEL, dimension=DIM)


def test_missing_or_broken_files_are_reported(backend: Backend, tmp_path: Path, index) -> None:
    index.save(tmp_path)
    manifest = _manifest(backend, tmp_path)
    payload = tmp_path / (INDEX_FILE if backend is FaissVectorIndex else DATA_DIR)
    if payload.is_dir():
        for p in sorted(payload.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        payload.rmdir()
    else:
        payload.unlink()
    with pytest.raises(CorruptIndexError, match=r"vector index files? missing"):
        backend.load(tmp_path, model_name=MODEL, dimension=DIM)
    manifest.write_text("{not json")
    with pytest.raises(CorruptIndexError, match=rf"manifest unreadable: .*{manifest.name}"):
        backend.load(tmp_path, model_name=MODEL, dimension=DIM)
    manifest.unlink()
    with pytest.raises(CorruptIndexError, match=rf"manifest missing: .*{manifest.name}"):
        backend.load(tmp_path, model_name=MODEL, dimension=DIM)


@pytest.fixture(scope="module")
def big() -> tuple[np.ndarray, np.ndarray, np.ndarray, ChromaVectorIndex]:
    """2,000 random unit vectors in Chroma (ids 7i + 3) and 50 random queries."""
    rng = np.random.default_rng(11)
    x, queries = _unit_rows(rng, 2000), _unit_rows(rng, 50)
    ids = np.arange(2000, dtype=np.int64) * 7 + 3
    idx = ChromaVectorIndex(DIM, MODEL)
    idx.add(ids, x)
    return ids, x, queries, idx


def _recall(found: list[list[Hit]], truth: list[list[int]]) -> float:
    return float(
        np.mean([len({h.id for h in f} & set(t)) / len(t) for f, t in zip(found, truth, strict=True)])
    )


def test_hnsw_recall_at_10_on_2000_vectors(big) -> None:
    ids, x, queries, idx = big
    found = [idx.search(q, 10) for q in queries]
    assert _recall(found, [_brute_force(ids, x, q, 10) for q in queries]) >= 0.95
    for hits, q in zip(found, queries, strict=True):  # whatever HNSW returns is scored exactly
        assert len(hits) == 10
        np.testing.assert_allclose([h.score for h in hits], x[(np.array([h.id for h in hits]) - 3) // 7] @ q)


def test_a_large_allowed_set_goes_through_filtered_hnsw(big) -> None:
    ids, x, queries, idx = big
    rows = np.sort(np.random.default_rng(12).choice(2000, size=1000, replace=False))
    assert len(rows) > chroma_module.EXACT_SCAN_MAX
    found = [idx.search(q, 10, allowed_ids=ids[rows]) for q in queries]
    assert all(len(hits) == 10 and set(h.id for h in hits) <= set(ids[rows]) for hits in found)
    assert _recall(found, [_brute_force(ids[rows], x[rows], q, 10) for q in queries]) >= 0.95


def test_too_few_hnsw_hits_fall_back_to_an_exact_scan(big, monkeypatch: pytest.MonkeyPatch) -> None:
    ids, x, queries, idx = big
    collection = idx._workspace.collection
    real_query = type(collection).query

    def starved(self, **kwargs):  # an HNSW that gives up after 3 hits
        got = real_query(self, **kwargs)
        return {"ids": [got["ids"][0][:3]], "embeddings": [got["embeddings"][0][:3]]}

    monkeypatch.setattr(type(collection), "query", starved)
    rows = np.arange(0, 2000, 3)
    for q in queries[:3]:
        assert [h.id for h in idx.search(q, 10)] == _brute_force(ids, x, q, 10)
        assert [h.id for h in idx.search(q, 10, ids[rows])] == _brute_force(ids[rows], x[rows], q, 10)


@pytest.fixture
def chroma_index(data) -> ChromaVectorIndex:
    ids, x, _ = data
    idx = ChromaVectorIndex(DIM, MODEL)
    idx.add(ids, x)
    return idx


def test_loading_never_touches_the_saved_files(tmp_path: Path, chroma_index: ChromaVectorIndex, data) -> None:
    """Chroma writes to a database it opens; the saved version must stay as it was (rollback)."""
    ids, x, queries = data
    index = chroma_index
    index.save(tmp_path / "v1")
    before = tree_sha256(tmp_path / "v1" / DATA_DIR)
    loaded = ChromaVectorIndex.load(tmp_path / "v1", model_name=MODEL, dimension=DIM)
    loaded.search(queries[0], 5)
    loaded.remove(ids[:50])
    loaded.add(np.array([1, 2]), x[:2])
    loaded.save(tmp_path / "v2")
    assert tree_sha256(tmp_path / "v1" / DATA_DIR) == before
    v1 = ChromaVectorIndex.load(tmp_path / "v1", model_name=MODEL, dimension=DIM)
    v2 = ChromaVectorIndex.load(tmp_path / "v2", model_name=MODEL, dimension=DIM)
    assert len(v1) == 300 and len(v2) == 252
    assert [h.id for h in v2.search(x[0], 1)] == [1]


@pytest.mark.filterwarnings("ignore:legacy embedding function config:DeprecationWarning")
def test_chroma_manifest_and_settings(tmp_path: Path) -> None:
    idx = ChromaVectorIndex(DIM, MODEL)
    idx.add(np.array([5]), np.eye(1, DIM, dtype=np.float32))
    idx.save(tmp_path)
    manifest = json.loads((tmp_path / "chroma.json").read_text())
    assert manifest["kind"] == "chroma-hnsw-ip" and manifest["format_version"] == 1
    assert manifest["hnsw"] == HNSW and manifest["sha256"] == tree_sha256(tmp_path / DATA_DIR)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chroma", "chroma.json"]
    workspace = idx._workspace
    assert workspace is not None
    assert workspace.client.get_settings().anonymized_telemetry is False
    assert workspace.collection.configuration["hnsw"]["space"] == "ip"
    assert workspace.collection.configuration.get("embedding_function") is None


def test_a_manifest_of_the_other_backend_is_refused(tmp_path: Path, data) -> None:
    ids, x, _ = data
    idx = ChromaVectorIndex(DIM, MODEL)
    idx.add(ids[:3], x[:3])
    idx.save(tmp_path)
    manifest = json.loads((tmp_path / "chroma.json").read_text())
    manifest["kind"] = "faiss-flat-ip"
    (tmp_path / "chroma.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match=r"is faiss-flat-ip v1; expected chroma-hnsw-ip v1"):
        ChromaVectorIndex.load(tmp_path, model_name=MODEL, dimension=DIM)


def test_the_working_folder_goes_with_the_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(chroma_module.tempfile, "tempdir", str(tmp_path))
    idx = ChromaVectorIndex(DIM, MODEL)
    assert list(tmp_path.iterdir()) == []  # the constructor is cheap: nothing created yet
    idx.add(np.array([1]), np.eye(1, DIM, dtype=np.float32))
    assert len(list(tmp_path.iterdir())) == 1
    del idx
    gc.collect()
    assert list(tmp_path.iterdir()) == []
