"""The checks every vector index (Faiss, Chroma, Milvus) makes on the rows and queries it is given.

One place for them, so that the backends refuse the same bad input with the same words: ids that
are not one-dimensional integers, vectors of another dimension, NaN or infinite values, an id
twice in one add or already held, a query of another dimension.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Contains = Callable[[np.ndarray], np.ndarray]  # ids -> whether each is held


class ModelVectors:
    """What a vector index says about itself: the model its vectors come from and their dimension."""

    _dimension: int
    _model_name: str

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_name(self) -> str:
        return self._model_name


def positive_dimension(dimension: int) -> int:
    """``dimension`` as an int; ValueError unless it is positive."""
    if int(dimension) <= 0:
        raise ValueError(f"dimension must be positive, got {dimension}")
    return int(dimension)


def as_ids(ids: np.ndarray) -> np.ndarray:
    """``ids`` as a contiguous int64 array; ValueError unless one-dimensional integers."""
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise ValueError(f"ids must be one-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"ids must be integers, got {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def preview(ids: np.ndarray, limit: int = 5) -> str:
    """The first ``limit`` ids, and how many there are in all when more: for error messages."""
    shown = ", ".join(str(int(i)) for i in ids[:limit])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def new_rows(
    ids: np.ndarray, vectors: np.ndarray, dimension: int, contains: Contains
) -> tuple[np.ndarray, np.ndarray]:
    """``ids`` (int64) and ``vectors`` (contiguous float32, shape (n, dimension)) checked for an add:
    as many ids as rows, finite values, no id twice and none already held (``contains``)."""
    ids = as_ids(ids)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dimension:
        raise ValueError(f"vectors must have shape (n, {dimension}), got {vectors.shape}")
    if len(ids) != len(vectors):
        raise ValueError(f"{len(ids)} ids for {len(vectors)} vectors")
    if len(ids) == 0:
        return ids, vectors
    if not np.isfinite(vectors).all():
        raise ValueError("vectors contain NaN or infinite values")
    unique, counts = np.unique(ids, return_counts=True)
    repeated = unique[counts > 1]
    if len(repeated):
        raise ValueError(f"duplicate ids in one add: {preview(repeated)}")
    present = unique[contains(unique)]
    if len(present):
        raise ValueError(f"ids already in the index: {preview(present)}; remove them first")
    return ids, vectors


def held_ids(ids: np.ndarray, contains: Contains) -> np.ndarray:
    """``ids`` (int64) whose vectors are asked for; KeyError naming any the index does not hold."""
    ids = as_ids(ids)
    missing = ids[~contains(ids)] if len(ids) else ids
    if len(missing):
        raise KeyError(f"ids not in the vector index: {preview(missing)}")
    return ids


def search_query(query: np.ndarray, k: int, dimension: int) -> np.ndarray | None:
    """``query`` as a flat float32 vector of ``dimension`` values; None when there is nothing to
    search for (an empty query, ``k <= 0``, or a zero vector, which points nowhere: every score
    would be 0). ValueError for another dimension or a NaN or infinite value."""
    query = np.asarray(query, dtype=np.float32)
    if query.size == 0 or k <= 0:
        return None
    query = query.reshape(-1)
    if len(query) != dimension:
        raise ValueError(f"query has dimension {len(query)}, the index has {dimension}")
    if not np.isfinite(query).all():
        raise ValueError("query contains NaN or infinite values")
    return query if query.any() else None
