"""Exact inner-product search over chunk vectors: Faiss ``IndexIDMap2(IndexFlatIP)``.

Faiss ids are the chunk row ids from SQLite (int64, sparse after deletions, never reused),
so a hit needs no id mapping (docs/contributing.md#one-row-id). Conventions:

* results are best first; **ties break by ascending chunk id** (Faiss itself does not order
  ties, so the search widens until the k-th score is no longer tied, then sorts);
* ``k <= 0``, an empty index, an empty or all-zero query, or an empty ``allowed_ids`` give ``[]``;
* ``allowed_ids`` is applied inside Faiss (an ``IDSelectorBatch`` through
  ``SearchParameters``), so k results come back whenever k allowed vectors exist;
* on disk: ``dense.faiss`` (``faiss.write_index``) and the manifest ``dense.json``; each file
  is written to a temporary name and moved into place with ``os.replace``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices import vector_rows
from hybrid_rag.indices.files import file_sha256, write_json_atomic
from hybrid_rag.indices.vector_rows import ModelVectors
from hybrid_rag.indices.vector_rows import as_ids as _as_ids  # the name the backends import
from hybrid_rag.types import Hit
from hybrid_rag.vectors import bad_rows

FORMAT_VERSION = 1
KIND = "faiss-flat-ip"
INDEX_FILE = "dense.faiss"
MANIFEST_FILE = "dense.json"


def rank_hits(ids: np.ndarray, scores: np.ndarray, k: int) -> list[Hit]:
    """The top ``k`` of (id, score) pairs: highest score first, ties by ascending id."""
    order = np.lexsort((ids, -scores))[:k]
    return [Hit(i, v) for i, v in zip(ids[order].tolist(), scores[order].tolist(), strict=True)]


def score_present(index: Any, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``query``'s inner product with the stored vector of each of ``ids`` (float64, in the order
    given), NaN for an id ``index`` does not hold; ``index`` has ``contains(ids)`` and ``vectors(ids)``."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    out = np.full(len(ids), np.nan)
    present = index.contains(ids)
    if present.any():
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        out[present] = index.vectors(ids[present]) @ q
    return out


class FaissVectorIndex(ModelVectors):
    """Vectors keyed by chunk id, searched exactly by inner product (cosine for unit vectors)."""

    def __init__(self, dimension: int, model_name: str) -> None:
        self._dimension = vector_rows.positive_dimension(dimension)
        self._model_name = model_name
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(self._dimension))
        self._sorted_ids: np.ndarray | None = None  # made on demand, dropped by add and remove

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def ids(self) -> np.ndarray:
        """The chunk ids held, int64, in insertion order."""
        return faiss.vector_to_array(self._index.id_map).astype(np.int64, copy=False)

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """Whether each of ``ids`` is held: a binary search in a sorted copy of the ids, so a
        query's few lookups cost O(log n) each instead of a pass over every id."""
        ids = _as_ids(ids)
        held = self._sorted_ids
        if held is None:
            held = self._sorted_ids = np.sort(self.ids())
        if len(held) == 0:
            return np.zeros(len(ids), dtype=bool)
        return held[np.searchsorted(held, ids).clip(max=len(held) - 1)] == ids

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add rows of ``vectors`` (float32, shape (n, dimension)) under ``ids``; ids must be new."""
        ids, vectors = vector_rows.new_rows(ids, vectors, self._dimension, self.contains)
        if len(ids) == 0:
            return
        self._index.add_with_ids(vectors, ids)
        self._sorted_ids = None

    def remove(self, ids: np.ndarray) -> int:
        """Remove ``ids`` (unknown ids are ignored); returns how many vectors were removed."""
        ids = np.unique(_as_ids(ids))
        if len(ids) == 0 or len(self) == 0:
            return 0
        self._sorted_ids = None
        return int(self._index.remove_ids(faiss.IDSelectorBatch(ids)))

    def vector(self, chunk_id: int) -> np.ndarray:
        """The stored vector of one chunk id (shape (dimension,)); KeyError if absent."""
        return self.vectors(np.array([chunk_id], dtype=np.int64))[0]

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """Stored vectors for ``ids`` in the order given (shape (n, dimension)); KeyError if any is absent."""
        ids = vector_rows.held_ids(ids, self.contains)
        if len(ids) == 0:
            return np.empty((0, self._dimension), dtype=np.float32)
        return self._index.reconstruct_batch(ids)

    def score(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The inner product of ``query`` with each of ``ids``, in the order given; NaN for an absent id."""
        return score_present(self, query, ids)

    def search(self, query: np.ndarray, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]:
        """Top-k chunk ids by inner product with ``query`` (shape (dimension,) or (1, dimension))."""
        q = vector_rows.search_query(query, k, self._dimension) if len(self) else None
        if q is None:
            return []
        selector, params = None, None
        limit = len(self)
        if allowed_ids is not None:
            allowed = np.unique(_as_ids(allowed_ids))
            if len(allowed) == 0:
                return []
            limit = min(limit, len(allowed))
            selector = faiss.IDSelectorBatch(allowed)  # kept alive here for the whole search
            params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]  # faiss stubs lack sel=
        return self._search_ties_by_id(np.ascontiguousarray(q[None, :]), min(k, limit), limit, params)

    def _search_ties_by_id(self, query: np.ndarray, k: int, limit: int, params: Any) -> list[Hit]:
        """Ask Faiss for k+1, widening while the k-th and the last score tie, then sort ties by id."""
        fetch = min(k + 1, limit)
        while True:
            with _one_openmp_thread():
                scores, ids = self._index.search(query, fetch, params=params)
            found = ids[0] != -1  # Faiss pads with -1 when fewer results exist
            scores, ids = scores[0][found], ids[0][found]
            if fetch >= limit or len(ids) < fetch or scores[-1] < scores[k - 1]:
                return rank_hits(ids, scores, k)
            fetch = min(fetch * 2, limit)

    def save(self, directory: Path) -> None:
        """Write ``dense.faiss`` and ``dense.json`` into ``directory`` (created if needed)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{INDEX_FILE}.", suffix=".tmp")
        os.close(fd)
        try:
            faiss.write_index(self._index, tmp)
            digest = file_sha256(Path(tmp))
            os.replace(tmp, directory / INDEX_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        write_json_atomic(
            directory / MANIFEST_FILE, vector_rows.vector_manifest(self, KIND, FORMAT_VERSION, digest)
        )

    @classmethod
    def load(cls, directory: Path, *, model_name: str, dimension: int) -> FaissVectorIndex:
        """Read an index saved by :meth:`save`, refusing one built for another model or dimension."""
        directory = Path(directory)
        manifest = vector_rows.read_manifest(
            directory, MANIFEST_FILE, KIND, FORMAT_VERSION, model_name=model_name, dimension=dimension
        )
        path = directory / INDEX_FILE
        if not path.is_file():
            raise CorruptIndexError(f"vector index file missing: {path}")
        if file_sha256(path) != manifest["sha256"]:
            raise CorruptIndexError(f"vector index file fails its checksum: {path}")
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as exc:
            raise CorruptIndexError(f"faiss cannot read {path}: {str(exc).splitlines()[0]}") from None
        if (
            not isinstance(index, faiss.IndexIDMap2)
            or index.d != dimension
            or index.ntotal != manifest["count"]
        ):
            raise CorruptIndexError(f"vector index file {path} does not match its manifest {MANIFEST_FILE}")
        damaged = _damaged_vectors(index)
        if damaged:
            raise CorruptIndexError(
                f"vector index file {path} holds {damaged} vector(s) that are not unit length (damaged "
                "before it was written: a corrupt cached vector)"
            )
        loaded = cls(dimension, model_name)
        loaded._index = index
        return loaded


def _damaged_vectors(index: faiss.IndexIDMap2, batch: int = 8192) -> int:
    """How many stored vectors no embedder could have written (``vectors.bad_rows``), read in place
    from a flat index a batch at a time (other kinds hold no plain rows: 0)."""
    inner = faiss.downcast_index(index.index)
    if not isinstance(inner, faiss.IndexFlat) or inner.ntotal == 0:
        return 0
    rows = faiss.rev_swig_ptr(inner.get_xb(), inner.ntotal * inner.d).reshape(inner.ntotal, inner.d)
    return int(sum(bad_rows(rows[start : start + batch]).sum() for start in range(0, len(rows), batch)))


@contextmanager
def _one_openmp_thread() -> Iterator[None]:
    """Run one query's search on one OpenMP thread (this thread only; restored after).

    Faiss splits a single query across OpenMP threads; on a busy 2-core machine that made a
    10k x 384 search 2.5-30 ms instead of 0.7-1 ms, as the threads wait for each other.
    """
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)
