"""A second dense backend: Chroma's HNSW index (``chromadb.PersistentClient``) behind ``VectorIndex``.

The public API and conventions are those of ``FaissVectorIndex`` (``dense.py``): the same
methods, argument checks, error messages, degenerate cases (``[]`` for ``k <= 0``, an empty
index, an empty or all-zero query, an empty ``allowed_ids``) and ties broken by ascending id.
What differs, on purpose:

* **Search is approximate** (HNSW on inner product, ``space "ip"``, parameters in ``HNSW``).
  Chroma's candidates are rescored exactly with numpy from their stored vectors, so the scores
  equal a brute force for the ids returned, and the search widens while the k-th score is tied,
  as Faiss's does. Tested: recall@10 >= 0.95 against a brute force on 2,000 vectors.
* **Filtered search** keeps the protocol's promise of k hits whenever k allowed vectors exist:
  an allowed set of at most ``EXACT_SCAN_MAX`` ids is scored exactly (its vectors fetched
  with ``get``); a larger one goes to HNSW with Chroma's ``ids`` filter, and if that returns
  fewer than k hits the answer falls back to an exact scan of the allowed set. (Fetching
  vectors from Chroma is slow, about 40 ms of CPU per 1,000 at dimension 384, so an exact
  scan of a large set is the exception, not the rule.)
* ``ids()`` are in ascending order (Faiss gives insertion order; no caller depends on it).
* **A private working copy**: Chroma writes to its files whenever it opens them (even a query
  changes them), so an index never works on the folder it was loaded from. ``load`` copies
  ``chroma/`` into a temporary folder and checks it there; ``save`` closes the client, copies
  the working folder out and reopens it. The temporary folder is removed when the index is
  garbage collected. Loading and saving therefore cost a copy of the files (about 3 KB a vector
  at dimension 384, twice Faiss's), not a rebuild of the graph.

On disk: ``chroma/`` (Chroma's own files: ``chroma.sqlite3`` and an HNSW segment folder, in
which Chroma writes its own ``index_metadata.pickle``; only Chroma reads it, never this code)
and the manifest ``chroma.json`` with a sha256 over every file in ``chroma/``. The checksum is
the real guard against damaged files: Chroma's SQLite part reports damage as an error, but its
HNSW reader trusts the segment files, and a truncated one that somehow passed the checksum has
been seen to crash the process (a segmentation fault in Chroma's native code) instead of
raising. Embeddings are always ours: the collection has no embedding function, so Chroma never
downloads a model, and telemetry is off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
import weakref
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices import vector_rows
from hybrid_rag.indices.dense import _as_ids, rank_hits, score_present
from hybrid_rag.indices.files import write_json_atomic
from hybrid_rag.indices.vector_rows import ModelVectors
from hybrid_rag.types import Hit

FORMAT_VERSION = 1
KIND = "chroma-hnsw-ip"
DATA_DIR = "chroma"
MANIFEST_FILE = "chroma.json"
COLLECTION = "dense"
# 32 neighbours, ef 200 to build and 400 to search: recall@10 0.99 on 10k random 384-d unit vectors
# (a worst case for HNSW; real embeddings are easier), where Chroma's defaults (16, 100, 100) give 0.5-0.8.
HNSW = {"space": "ip", "max_neighbors": 32, "ef_construction": 200, "ef_search": 400}
GET_BATCH = 5000  # ids per ``get`` call
EXACT_SCAN_MAX = 256  # an allowed set this small is scored exactly (fetching 256 vectors: ~10 ms)


def tree_sha256(root: Path) -> str:
    """A sha256 over every file below ``root``: its relative path, size and content, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(root).as_posix()}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


class _Workspace:
    """A temporary folder holding a Chroma database, and the client open on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.db = root / "db"
        self.client: Any = None
        self.collection: Any = None

    @classmethod
    def create(cls, source: Path | None = None) -> _Workspace:
        workspace = cls(Path(tempfile.mkdtemp(prefix="hybrid-rag-chroma-")))
        if source is not None:
            shutil.copytree(source, workspace.db)
        return workspace

    def open(self, *, create: bool) -> None:
        import chromadb  # here, not at import: chromadb takes about a second to import
        from chromadb.config import Settings as ChromaSettings

        self.client = chromadb.PersistentClient(
            path=str(self.db), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        )
        if create:
            self.collection = self.client.get_or_create_collection(
                COLLECTION, embedding_function=None, configuration={"hnsw": dict(HNSW)}
            )
        else:
            self.collection = self.client.get_collection(COLLECTION, embedding_function=None)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        self.client = self.collection = None

    def cleanup(self) -> None:
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)


class ChromaVectorIndex(ModelVectors):
    """Vectors keyed by chunk id in a Chroma collection, searched by inner product."""

    def __init__(self, dimension: int, model_name: str) -> None:
        self._dimension = vector_rows.positive_dimension(dimension)
        self._model_name = model_name
        self._ids = np.empty(0, dtype=np.int64)  # sorted, mirrors the collection
        self._workspace: _Workspace | None = None  # created on first use

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self) -> np.ndarray:
        """The chunk ids held, int64, ascending."""
        return self._ids.copy()

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """Whether each of ``ids`` is held."""
        return np.isin(_as_ids(ids), self._ids)

    def _attach(self, workspace: _Workspace) -> None:
        self._workspace = workspace
        weakref.finalize(self, workspace.cleanup)

    def _collection(self) -> Any:
        if self._workspace is None:
            workspace = _Workspace.create()
            try:
                workspace.open(create=True)
            except BaseException:
                workspace.cleanup()
                raise
            self._attach(workspace)
        assert self._workspace is not None and self._workspace.collection is not None
        return self._workspace.collection

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add rows of ``vectors`` (float32, shape (n, dimension)) under ``ids``; ids must be new."""
        ids, vectors = vector_rows.new_rows(ids, vectors, self._dimension, self.contains)
        if len(ids) == 0:
            return
        collection = self._collection()
        batch = self._workspace.client.get_max_batch_size()  # type: ignore[union-attr]
        for start in range(0, len(ids), batch):
            part = ids[start : start + batch]
            collection.add(ids=[str(i) for i in part.tolist()], embeddings=vectors[start : start + batch])
            self._ids = np.union1d(self._ids, part)

    def remove(self, ids: np.ndarray) -> int:
        """Remove ``ids`` (unknown ids are ignored); returns how many vectors were removed."""
        present = np.intersect1d(_as_ids(ids), self._ids)
        if len(present) == 0:
            return 0
        collection = self._collection()
        for start in range(0, len(present), GET_BATCH):
            part = present[start : start + GET_BATCH]
            collection.delete(ids=[str(i) for i in part.tolist()])
            self._ids = np.setdiff1d(self._ids, part, assume_unique=True)
        return len(present)

    def vector(self, chunk_id: int) -> np.ndarray:
        """The stored vector of one chunk id (shape (dimension,)); KeyError if absent."""
        return self.vectors(np.array([chunk_id], dtype=np.int64))[0]

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """Stored vectors for ``ids`` in the order given (shape (n, dimension)); KeyError if any is absent."""
        ids = vector_rows.held_ids(ids, self.contains)
        if len(ids) == 0:
            return np.empty((0, self._dimension), dtype=np.float32)
        unique, inverse = np.unique(ids, return_inverse=True)
        return self._fetch(unique)[inverse]

    def _fetch(self, ids: np.ndarray) -> np.ndarray:
        """Vectors of sorted, unique, present ``ids``, in that order."""
        out = np.empty((len(ids), self._dimension), dtype=np.float32)
        collection = self._collection()
        for start in range(0, len(ids), GET_BATCH):
            part = ids[start : start + GET_BATCH]
            got = collection.get(ids=[str(i) for i in part.tolist()], include=["embeddings"])
            rows = np.searchsorted(part, np.array([int(i) for i in got["ids"]], dtype=np.int64))
            out[start + rows] = np.asarray(got["embeddings"], dtype=np.float32)
        return out

    def score(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The inner product of ``query`` with each of ``ids``, in the order given; NaN for an absent id."""
        return score_present(self, query, ids)

    def search(self, query: np.ndarray, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]:
        """Top-k chunk ids by inner product with ``query`` (shape (dimension,) or (1, dimension))."""
        q = vector_rows.search_query(query, k, self._dimension) if len(self) else None
        if q is None:
            return []
        if allowed_ids is None:
            return self._search_hnsw(q, min(k, len(self)), None)
        allowed = np.intersect1d(_as_ids(allowed_ids), self._ids)
        if len(allowed) == 0:
            return []
        if len(allowed) <= EXACT_SCAN_MAX:
            return rank_hits(allowed, self._exact_scores(allowed, q), k)
        return self._search_hnsw(q, min(k, len(allowed)), allowed)

    def _exact_scores(self, ids: np.ndarray, q: np.ndarray) -> np.ndarray:
        scores = np.empty(len(ids), dtype=np.float32)
        for start in range(0, len(ids), GET_BATCH):
            scores[start : start + GET_BATCH] = self._fetch(ids[start : start + GET_BATCH]) @ q
        return scores

    def _search_hnsw(self, q: np.ndarray, k: int, allowed: np.ndarray | None) -> list[Hit]:
        """Ask HNSW (filtered to ``allowed`` if given) for k+1, widening while the k-th and the
        last exact score tie, then sort ties by id.

        Should HNSW return fewer than k hits (a selective filter, or a graph left sparse by many
        deletions), the answer falls back to an exact scan, so k hits come back whenever k
        vectors exist.
        """
        pool = self._ids if allowed is None else allowed
        limit = len(pool)
        fetch = min(k + 1, limit)
        collection = self._collection()
        where_ids = None if allowed is None else [str(i) for i in allowed.tolist()]
        while True:
            got = collection.query(
                query_embeddings=q[None, :], n_results=fetch, ids=where_ids, include=["embeddings"]
            )
            ids = np.array([int(i) for i in got["ids"][0]], dtype=np.int64)
            if len(ids) < k:
                return rank_hits(pool, self._exact_scores(pool, q), k)
            scores = np.asarray(got["embeddings"][0], dtype=np.float32).reshape(-1, self._dimension) @ q
            ranked = np.sort(scores)[::-1]
            if fetch >= limit or len(ids) < fetch or ranked[-1] < ranked[k - 1]:
                return rank_hits(ids, scores, k)
            fetch = min(fetch * 2, limit)

    def save(self, directory: Path) -> None:
        """Write ``chroma/`` and ``chroma.json`` into ``directory`` (created if needed)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._collection()  # an index never used still saves an (empty) collection
        workspace = self._workspace
        assert workspace is not None
        workspace.close()  # Chroma's files are complete and still only once its client is closed
        staging = Path(tempfile.mkdtemp(dir=directory, prefix=f".{DATA_DIR}.", suffix=".tmp"))
        try:
            shutil.copytree(workspace.db, staging, dirs_exist_ok=True)
            digest = tree_sha256(staging)
            _replace_dir(staging, directory / DATA_DIR)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            workspace.open(create=False)
        manifest = {
            **vector_rows.vector_manifest(self, KIND, FORMAT_VERSION, digest),
            "hnsw": dict(HNSW),
            "chromadb_version": version("chromadb"),
        }
        write_json_atomic(directory / MANIFEST_FILE, manifest)

    @classmethod
    def load(cls, directory: Path, *, model_name: str, dimension: int) -> ChromaVectorIndex:
        """Read an index saved by :meth:`save`, refusing one built for another model or dimension."""
        directory = Path(directory)
        manifest = vector_rows.read_manifest(
            directory, MANIFEST_FILE, KIND, FORMAT_VERSION, model_name=model_name, dimension=dimension
        )
        path = directory / DATA_DIR
        if not path.is_dir():
            raise CorruptIndexError(f"vector index files missing: {path}")
        workspace = _Workspace.create(source=path)
        try:
            if tree_sha256(workspace.db) != manifest["sha256"]:
                raise CorruptIndexError(f"vector index files fail their checksum: {path}")
            ids = _open_and_check(workspace, path, dimension)
            if len(ids) != manifest["count"]:
                raise CorruptIndexError(
                    f"vector index files {path} do not match their manifest {MANIFEST_FILE}"
                )
        except BaseException:
            workspace.cleanup()
            raise
        loaded = cls(dimension, model_name)
        loaded._attach(workspace)
        loaded._ids = ids
        return loaded


def _open_and_check(workspace: _Workspace, path: Path, dimension: int) -> np.ndarray:
    """Open the copied database, read its ids and run one query, so damage shows at load time."""
    try:
        workspace.open(create=False)
        collection = workspace.collection
        got = collection.get(include=[])
        sample = collection.get(limit=1, include=["embeddings"])
        if sample["ids"]:
            vector = np.asarray(sample["embeddings"][0], dtype=np.float32)
            if vector.shape != (dimension,):
                raise CorruptIndexError(f"vector index files {path} hold vectors of shape {vector.shape}")
            collection.query(query_embeddings=vector[None, :], n_results=1, include=[])
    except CorruptIndexError:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CorruptIndexError(f"chroma cannot read {path}: {first}") from None
    try:
        ids = np.array([int(i) for i in got["ids"]], dtype=np.int64)
    except ValueError:
        raise CorruptIndexError(f"vector index files {path} hold ids that are not chunk ids") from None
    return np.sort(ids)


def _replace_dir(new: Path, target: Path) -> None:
    """Move folder ``new`` to ``target``; an existing ``target`` is moved aside first, then deleted."""
    if not target.exists():
        os.replace(new, target)
        return
    old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
    os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)
