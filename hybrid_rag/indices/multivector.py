"""MaxP dense search: a chunk is as relevant as its best window (Dai and Callan, SIGIR 2019).

Chunks are 500-800 tiktoken tokens; all-MiniLM-L6-v2 reads 256 word pieces. One pooled vector
per chunk averages a paragraph away when the rest of the chunk is about something else (measured
in ``benchmarks/RESULTS.md``), so the embedder cuts a long chunk into overlapping windows and this
index keeps every window's vector. A search scores each chunk by its best window.

Ids: the window vectors live in an ordinary ``VectorIndex`` (Faiss ``IndexIDMap2``) under
``window_id = chunk_id << WINDOW_BITS | window``; everything outside this module sees chunk ids
only. A chunk has at most ``MAX_WINDOWS`` windows; past that, the tail windows are mean-pooled
into the last slot (800 tokens need about 4 windows, so this is for pathological text only).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.dense import FaissVectorIndex, rank_hits
from hybrid_rag.indices.files import write_json_atomic
from hybrid_rag.protocols import VectorIndex
from hybrid_rag.types import Hit
from hybrid_rag.vectors import pool_windows

WINDOW_BITS = 5
MAX_WINDOWS = 1 << WINDOW_BITS
MANIFEST_FILE = "windows.json"


def cap_windows(windows: np.ndarray) -> np.ndarray:
    """At most MAX_WINDOWS rows: the tail past the last slot is mean-pooled into it, renormalised."""
    windows = np.atleast_2d(np.asarray(windows, dtype=np.float32))
    if len(windows) <= MAX_WINDOWS:
        return windows
    tail = windows[MAX_WINDOWS - 1 :].mean(axis=0)
    norm = float(np.linalg.norm(tail))
    tail = tail / norm if norm > 0 else tail
    return np.vstack([windows[: MAX_WINDOWS - 1], tail[None, :]])


def max_per_chunk(window_ids: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, best window score) from window hits."""
    chunk_ids = window_ids >> WINDOW_BITS
    order = np.lexsort((chunk_ids, -scores))
    chunk_ids, scores = chunk_ids[order], scores[order]
    _, first = np.unique(chunk_ids, return_index=True)
    return chunk_ids[first], scores[first]


class WindowedVectorIndex:
    """The ``VectorIndex`` protocol over chunk ids, with MaxP scoring over window vectors."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self._counts: dict[int, int] = {}
        for wid in inner.ids().tolist():
            cid = wid >> WINDOW_BITS
            self._counts[cid] = self._counts.get(cid, 0) + 1

    @classmethod
    def create(cls, dimension: int, model_name: str, backend: type = FaissVectorIndex) -> WindowedVectorIndex:
        """An empty index over a new ``backend`` (FaissVectorIndex or ChromaVectorIndex)."""
        return cls(backend(dimension, model_name))

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def __len__(self) -> int:
        return len(self._counts)

    @property
    def window_count(self) -> int:
        return len(self.inner)

    def ids(self) -> np.ndarray:
        return np.array(sorted(self._counts), dtype=np.int64)

    def contains(self, ids: np.ndarray) -> np.ndarray:
        return np.array([int(i) in self._counts for i in np.asarray(ids).reshape(-1)], dtype=bool)

    def _window_ids(self, chunk_ids: np.ndarray) -> np.ndarray:
        out = [(int(c) << WINDOW_BITS) | w for c in chunk_ids for w in range(self._counts.get(int(c), 0))]
        return np.array(out, dtype=np.int64)

    def add(self, ids: np.ndarray, windows: Sequence[np.ndarray]) -> None:
        """Add each chunk id with its window matrix (shape (n_windows, dimension))."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) != len(windows):
            raise ValueError(f"{len(ids)} ids for {len(windows)} window matrices")
        present = [int(i) for i in ids if int(i) in self._counts]
        if present:
            raise ValueError(f"ids already in the index: {present[:5]}; remove them first")
        capped = [cap_windows(w) for w in windows]
        window_ids = np.array(
            [(int(c) << WINDOW_BITS) | w for c, m in zip(ids, capped, strict=True) for w in range(len(m))],
            dtype=np.int64,
        )
        if len(window_ids) == 0:
            return
        self.inner.add(window_ids, np.vstack(capped))
        for c, m in zip(ids, capped, strict=True):
            self._counts[int(c)] = len(m)

    def remove(self, ids: np.ndarray) -> int:
        chunk_ids = [int(i) for i in np.unique(np.asarray(ids, dtype=np.int64)) if int(i) in self._counts]
        if not chunk_ids:
            return 0
        self.inner.remove(self._window_ids(np.array(chunk_ids)))
        for c in chunk_ids:
            del self._counts[c]
        return len(chunk_ids)

    def windows(self, chunk_id: int) -> np.ndarray:
        return self.inner.vectors(self._window_ids(np.array([chunk_id])))  # type: ignore[attr-defined]

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """Each chunk's pooled vector (for MMR and clustering), in the order given."""
        ids = np.asarray(ids, dtype=np.int64)
        missing = [int(i) for i in ids if int(i) not in self._counts]
        if missing:
            raise KeyError(f"ids not in the vector index: {missing[:5]}")
        if len(ids) == 0:
            return np.empty((0, self.dimension), dtype=np.float32)
        stacked = self.inner.vectors(self._window_ids(ids))  # type: ignore[attr-defined]
        out, start = [], 0
        for c in ids:
            n = self._counts[int(c)]
            out.append(pool_windows(stacked[start : start + n]))
            start += n
        return np.vstack(out).astype(np.float32)

    def score(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Each of ``ids``' best window inner product with ``query`` (MaxP, as ``search`` ranks), in
        the order given; NaN for a chunk this index does not hold."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        out = np.full(len(ids), np.nan)
        present = self.contains(ids)
        if present.any():
            chunk_ids = ids[present]
            window_scores = self.inner.vectors(self._window_ids(chunk_ids)) @ np.asarray(  # type: ignore[attr-defined]
                query, dtype=np.float32
            ).reshape(-1)
            counts = np.array([self._counts[int(c)] for c in chunk_ids])
            out[present] = np.maximum.reduceat(window_scores, np.concatenate(([0], np.cumsum(counts)[:-1])))
        return out

    def search(self, query: np.ndarray, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]:
        """Top-k chunks by their best window's inner product; ties by ascending chunk id."""
        if k <= 0 or not self._counts:
            return []
        allowed_windows = None
        n_chunks = len(self._counts)
        if allowed_ids is not None:
            allowed = [
                int(i) for i in np.unique(np.asarray(allowed_ids, dtype=np.int64)) if int(i) in self._counts
            ]
            if not allowed:
                return []
            allowed_windows = self._window_ids(np.array(allowed))
            n_chunks = len(allowed)
        total = len(allowed_windows) if allowed_windows is not None else self.window_count
        want = min(k, n_chunks)
        fetch = min(total, want * 4)
        while True:
            hits = self.inner.search(query, fetch, allowed_windows)
            if not hits:
                return []
            chunk_ids, scores = max_per_chunk(
                np.array([h.id for h in hits], dtype=np.int64), np.array([h.score for h in hits])
            )
            # every chunk not yet seen scores at most the last window score fetched, so the top
            # `want` are final once `want` chunks lie strictly above it or all windows were fetched
            floor = hits[-1].score
            if fetch >= total or int((scores > floor).sum()) >= want:
                return rank_hits(chunk_ids, scores, want)
            fetch = min(total, fetch * 4)

    def save(self, directory: Path) -> None:
        self.inner.save(directory)
        write_json_atomic(
            Path(directory) / MANIFEST_FILE,
            {
                "kind": "maxp-windows",
                "window_bits": WINDOW_BITS,
                "chunks": len(self),
                "windows": self.window_count,
            },
        )

    @classmethod
    def load(
        cls, directory: Path, *, model_name: str, dimension: int, backend: Any = FaissVectorIndex
    ) -> WindowedVectorIndex:
        import json

        path = Path(directory) / MANIFEST_FILE
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError) as exc:
            raise CorruptIndexError(
                f"window index manifest {path} is missing or corrupt: run `hybrid-rag rebuild`"
            ) from exc
        if manifest.get("window_bits") != WINDOW_BITS:
            raise CorruptIndexError(
                f"{path} uses window_bits {manifest.get('window_bits')}: run `hybrid-rag rebuild`"
            )
        index = cls(backend.load(directory, model_name=model_name, dimension=dimension))
        if len(index) != manifest.get("chunks") or index.window_count != manifest.get("windows"):
            raise CorruptIndexError(
                f"{path} does not match the dense index beside it: run `hybrid-rag rebuild`"
            )
        return index


def add_chunk_vectors(dense: Any, chunks: Sequence[Any], windows: dict[str, np.ndarray]) -> None:
    """Add ``chunks`` (each with its ``windows[chunk.sha256]``) to a dense index: every window to a
    windowed one, their pooled vector to a one-vector-a-chunk one (a full build and a second
    vector set's alike)."""
    if not chunks:
        return
    ids = np.array([c.id for c in chunks], dtype=np.int64)
    if isinstance(dense, WindowedVectorIndex):
        dense.add(ids, [windows[c.sha256] for c in chunks])
    else:
        dense.add(ids, np.stack([pool_windows(windows[c.sha256]) for c in chunks]))
