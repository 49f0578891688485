"""The checks every vector index (Faiss, Chroma, Milvus) makes on the rows and queries it is given.

One place for them, so that the backends refuse the same bad input with the same words: ids that
are not one-dimensional integers, vectors of another dimension, NaN or infinite values, an id
twice in one add or already held, a query of another dimension.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError, IndexMismatchError

Contains = Callable[[np.ndarray], np.ndarray]  # ids -> whether each is held


class ModelVectors:
    """What a vector index (or the fake embedder) says about itself: the model its vectors come from
    and their dimension."""

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


MANIFEST_KEYS = ("format_version", "kind", "model_name", "dimension", "count", "sha256")


def vector_manifest(index: ModelVectors, kind: str, format_version: int, digest: str) -> dict[str, Any]:
    """What a saved vector index's manifest says in every backend: its format, model, size, checksum."""
    return {
        "format_version": format_version,
        "kind": kind,
        "model_name": index.model_name,
        "dimension": index.dimension,
        "count": len(index),  # type: ignore[arg-type]  # every vector index has a length
        "sha256": digest,
    }


def read_manifest(
    directory: Path, name: str, kind: str, format_version: int, *, model_name: str, dimension: int
) -> dict[str, Any]:
    """The manifest ``name`` in ``directory``: CorruptIndexError when it is missing, unreadable,
    incomplete or of another kind or format; IndexMismatchError when built for another model or
    dimension than the config's."""
    path = directory / name
    if not path.is_file():
        raise CorruptIndexError(f"vector index manifest missing: {path}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptIndexError(f"vector index manifest unreadable: {path} ({exc})") from None
    if not isinstance(manifest, dict) or any(key not in manifest for key in MANIFEST_KEYS):
        raise CorruptIndexError(f"vector index manifest incomplete: {path}")
    if manifest["kind"] != kind or manifest["format_version"] != format_version:
        raise CorruptIndexError(
            f"vector index manifest {path} is {manifest['kind']} v{manifest['format_version']}; "
            f"expected {kind} v{format_version}: run `hybrid-rag rebuild`"
        )
    built_model, built_dim = manifest["model_name"], manifest["dimension"]
    if built_model != model_name or built_dim != dimension:
        raise IndexMismatchError(
            f"index at {directory} was built with model {built_model} (dim {built_dim}); "
            f"the config says model {model_name} (dim {dimension}): run `hybrid-rag rebuild`"
        )
    return manifest
