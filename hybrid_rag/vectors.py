"""Pure vector helpers shared by embedders, indices and the store: windows, pooling, normalising."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def window_spans(n_tokens: int, window: int, overlap: int) -> list[tuple[int, int]]:
    """Half-open token ranges of length ``window`` that overlap by at least ``overlap`` and cover
    ``range(n_tokens)``. The last window is aligned to the end, so every window is full length.

    >>> window_spans(10, 4, 1)
    [(0, 4), (3, 7), (6, 10)]
    """
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    if not 0 <= overlap < window:
        raise ValueError(f"overlap must be in [0, window), got {overlap} for window {window}")
    if n_tokens <= window:
        return [(0, max(n_tokens, 0))]
    stride = window - overlap
    spans = [(start, start + window) for start in range(0, n_tokens - window, stride)]
    spans.append((n_tokens - window, n_tokens))
    return spans


def window_texts(text: str, offsets: Sequence[tuple[int, int]], window: int, overlap: int) -> list[str]:
    """Cut ``text`` into windows of ``window`` tokens, given each token's (start, end) characters.

    A text that fits is returned whole. Windows are slices of the original text (not decoded
    word pieces), so re-tokenising one can differ from the span by a token at its edges; the
    model then truncates that token, which the overlap covers.
    """
    if len(offsets) <= window:
        return [text]
    return [text[offsets[s][0] : offsets[e - 1][1]] for s, e in window_spans(len(offsets), window, overlap)]


def split_by_owner(vectors: np.ndarray, owners: Sequence[int], n: int) -> list[np.ndarray]:
    """Window vectors grouped by the passage that owns them: n matrices, in passage order."""
    owners_arr = np.asarray(owners, dtype=np.int64)
    return [vectors[owners_arr == i] for i in range(n)]


def pool_windows(windows: np.ndarray) -> np.ndarray:
    """One passage's vector from its window vectors: the normalised mean."""
    return l2_normalise(np.asarray(windows, dtype=np.float64).mean(axis=0, keepdims=True))[0]


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32; an all-zero row stays zero."""
    matrix = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def mean_pool(vectors: np.ndarray, owners: Sequence[int], n: int) -> np.ndarray:
    """Per passage, the renormalised mean of its window vectors; ``owners[i]`` is the passage of row i.

    If a passage's windows cancel out exactly (a zero mean), its first window stands in.
    """
    owner = np.asarray(owners, dtype=np.int64)
    if len(owner) != len(vectors):
        raise ValueError(f"{len(vectors)} window vectors but {len(owner)} owners")
    if n == 0:
        return np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0), dtype=np.float32)
    counts = np.bincount(owner, minlength=n)
    if len(counts) > n or (counts == 0).any():
        raise ValueError("every passage needs at least one window, and owners must be < n")
    sums = np.zeros((n, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, owner, vectors)
    zero = np.linalg.norm(sums, axis=1) == 0
    if zero.any():
        first = {int(p): i for i, p in reversed(list(enumerate(owner)))}
        for p in np.flatnonzero(zero):
            sums[p] = vectors[first[int(p)]]
    return l2_normalise(sums)


UNIT_NORM_TOLERANCE = 1e-3  # an L2-normalised float32 row is within this of 1 (a zero row is 0)


def bad_rows(matrix: np.ndarray, tolerance: float = UNIT_NORM_TOLERANCE) -> np.ndarray:
    """Which rows cannot be an embedder's output: not finite, or neither unit length nor zero
    (every embedder here L2-normalises; see ``l2_normalise``). Damaged bytes almost never keep a
    row's norm at 1, so this catches a corrupted vector that has no checksum.

    >>> bad_rows(np.array([[0.6, 0.8], [0.0, 0.0], [3.0, 4.0]], dtype=np.float32)).tolist()
    [False, False, True]
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(matrix, axis=1)
    finite = np.isfinite(matrix).all(axis=1)
    return ~finite | ((np.abs(norms - 1.0) > tolerance) & (norms != 0.0))
