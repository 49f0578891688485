"""Exact cosine top-k over stored JSON vectors, shared by the compat classes.

Conventions (those of the per-row loops the compat classes replace):

* the score is the plain cosine of the raw vectors, computed in float64; 0.0 when either vector
  is zero (never ``-0.0``, never NaN);
* results are highest first, **ties in stored (file) order**; identical stored vectors always get
  bit-identical scores (a BLAS matrix product can round the same row differently at different
  positions, so a duplicate is scored through its first copy);
* a JSON vector is a non-empty list of finite numbers; ``true``/``false`` are not numbers;
* ``k <= 0`` gives nothing; ``min_score`` drops rows before the top ``k`` are taken.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_NUMBER_TYPES = frozenset({int, float})
_FINGERPRINT_SEED = 20240601


def is_vector(value: object) -> bool:
    """Whether ``value`` (one parsed JSON value) is a usable vector: a non-empty list of finite
    numbers. ``[1, 0.5]`` is; ``[]``, ``["1"]``, ``[true]``, ``[NaN]`` and ``None`` are not."""
    if not isinstance(value, list) or not value or not set(map(type, value)) <= _NUMBER_TYPES:
        return False
    try:
        return math.isfinite(float(sum(value)))
    except OverflowError:  # an integer too large for a float
        return False


def first_copies(matrix: np.ndarray) -> np.ndarray | None:
    """For each row the index of the first row with the same bits (itself if none), or None when
    every row is unique. Rows are fingerprinted by an exact wrapping integer product of their bits;
    a shared fingerprint is confirmed by comparing the rows."""
    n, dim = matrix.shape
    if n < 2:
        return None
    weights = np.random.default_rng(_FINGERPRINT_SEED).integers(1, 2**63, size=dim, dtype=np.uint64)
    keys = np.ascontiguousarray(matrix).view(np.uint64) @ (weights | np.uint64(1))
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    copies = first[inverse.reshape(-1)]
    later = np.flatnonzero(copies != np.arange(n))
    if later.size == 0:
        return None
    collided = later[~(matrix[later] == matrix[copies[later]]).all(axis=1)]
    copies[collided] = collided
    return copies if collided.size < later.size else None


def top_indices(scores: np.ndarray, k: int, min_score: float | None = None) -> np.ndarray:
    """Positions of the ``k`` highest ``scores`` (at least ``min_score`` when given), highest
    first, ties by position: a partial partition, then an exact sort of what survives."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = np.arange(len(scores)) if min_score is None else np.flatnonzero(scores >= min_score)
    if len(candidates) > k:
        kept = scores[candidates]
        kth = len(kept) - k
        candidates = candidates[kept >= np.partition(kept, kth)[kth]]  # every tie at the k-th stays in
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order[:k]]


def matrix_of(rows: Sequence[Sequence[float]], dimension: int) -> np.ndarray:
    """Vectors of one length copied into a float64 matrix, row by row (twice as fast as
    ``np.array(rows)`` on lists of Python floats)."""
    matrix = np.empty((len(rows), dimension), dtype=np.float64)
    for i, row in enumerate(rows):
        matrix[i] = row
    return matrix


class CosineScorer:
    """The cosine of one query with every stored vector, by one matrix-vector product.

    ``matrix`` (float64, one stored vector a row) is normalised in place and kept; ``source``
    names the vectors in errors (a file name).
    """

    def __init__(self, matrix: np.ndarray, source: str) -> None:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms > 0, norms, 1.0)
        matrix += 0.0  # -0.0 becomes 0.0, so equal vectors have equal bits
        self._matrix = matrix
        self._copies = first_copies(matrix)
        self.dimension = matrix.shape[1]
        self.source = source

    def __len__(self) -> int:
        return len(self._matrix)

    def scores(self, query: Sequence[float] | np.ndarray) -> np.ndarray:
        """Cosine of ``query`` with each stored row, in stored order (float64).

        Raises ValueError for a query that is not one finite vector of the stored dimension.
        """
        vector = np.asarray(query, dtype=np.float64)
        if vector.ndim != 1:
            raise ValueError(f"the query must be one vector, got an array of shape {vector.shape}")
        if len(vector) != self.dimension:
            raise ValueError(
                f"the query vector has dimension {len(vector)} but the vectors in {self.source} "
                f"have dimension {self.dimension}"
            )
        if not np.isfinite(vector).all():
            raise ValueError("the query vector has a NaN or infinite value")
        norm = np.linalg.norm(vector)
        scores = self._matrix @ (vector / norm if norm > 0 else vector) + 0.0
        return scores if self._copies is None else scores[self._copies]
