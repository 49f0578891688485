"""Hub chunks, measured when a dense index version is built, and their correction at query time.

A *hub* is a chunk that is a near neighbour of many others in the embedding space, so the dense
stage puts it in the top few of many unrelated questions (a header's doc comment, a long generic
function: RESULTS.md#hubness). The measure is CSLS's (Conneau et al. 2018, "Word translation
without parallel data"): a chunk's *radius* ``r_x`` is its mean cosine to its ``k`` nearest other
chunks, and a question scores a chunk ``2 cos(q, x) - r_x`` instead of ``cos(q, x)`` (the
question's own radius is the same for every chunk and left out: it cannot reorder a list).

* **Built** with the version (``build.py``): every chunk's vector (a long chunk's pooled windows)
  searched against all of them by exact inner product, a batch at a time, its ``k`` best other
  chunks kept. A build whose chunks changed by a few updates the previous version's table (the
  new chunks searched, the kept ones merged with the new chunks, those that lost a neighbour
  searched again) instead of searching everything; a store over ``index.hubness_max_chunks``
  gets none (the search is quadratic).
* **Stored** beside the Faiss index as ``hubness.npz`` (ids, radius, each chunk's neighbours and
  their cosines) and named in the version's manifest (``hubness: {k, chunks, format, seconds}``);
  no store schema change. A version without it (built before it, or over the cap) works as
  before: the correction says so in the trace and ranks by cosine.
* **Applied** by ``features.hubness`` (per call too) in the dense stage and wherever a query
  scores dense (exact scores, expansion): :class:`HubCorrected` wraps the version's dense index.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.types import Hit, Tracer

if TYPE_CHECKING:
    from hybrid_rag.indices.built import LiveIndex

FILE = "hubness.npz"
MANIFEST_KEY = "hubness"
FORMAT_VERSION = 1
BATCH_FLOATS = 1 << 24  # a batch's score matrix at most (64 MB): rows = this // chunks
REDO_SHARE = 0.2  # more chunks changed than this share: the whole table is searched again
WIDEN = 2  # a corrected search asks the index for this many times k, then re-ranks


@dataclass(frozen=True)
class Hubness:
    """Each chunk's ``k`` nearest other chunks and their cosines; ``radius`` is their mean."""

    ids: np.ndarray  # int64, ascending
    neighbours: np.ndarray  # (n, k) int64, -1 where fewer than k other chunks exist
    cosines: np.ndarray  # (n, k) float32, best first; -inf where no neighbour
    k: int

    @property
    def radius(self) -> np.ndarray:
        held = np.isfinite(self.cosines)
        total = np.where(held, self.cosines, 0.0).sum(axis=1)
        return (total / np.maximum(held.sum(axis=1), 1)).astype(np.float32)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Radii:
    """What a query reads of a version's table: each id's radius (``fallback``, the median, for an
    id not in it)."""

    ids: np.ndarray
    radius: np.ndarray
    fallback: float = field(init=False)

    def __post_init__(self) -> None:  # once, not per scored list
        object.__setattr__(self, "fallback", float(np.median(self.radius)) if len(self.radius) else 0.0)

    def of(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        fallback = self.fallback
        if not len(self.ids):
            return np.full(len(ids), fallback)
        at = np.searchsorted(self.ids, ids).clip(max=len(self.ids) - 1)
        return np.where(self.ids[at] == ids, self.radius[at], fallback).astype(np.float64)


def _top_k(vectors: np.ndarray, ids: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``rows`` (positions into ``vectors``) its ``k`` best other rows by exact inner
    product (Faiss's brute-force k-NN, a batch at a time): (ids, cosines) best first; -1 / -inf past
    the rows that exist."""
    n = len(vectors)
    out_ids = np.full((len(rows), k), -1, dtype=np.int64)
    out_cos = np.full((len(rows), k), -np.inf, dtype=np.float32)
    take = min(k, n - 1)
    if take <= 0 or not len(rows):
        return out_ids, out_cos
    step = max(1, BATCH_FLOATS // n)
    for start in range(0, len(rows), step):
        batch = rows[start : start + step]
        cos, at = faiss.knn(vectors[batch], vectors, take + 1, metric=faiss.METRIC_INNER_PRODUCT)
        # not its own neighbour: its entry moved last (a twin may outscore it), the rest in order
        order = np.argsort(at == batch[:, None], axis=1, kind="stable")[:, :take]
        out_ids[start : start + len(batch), :take] = ids[np.take_along_axis(at, order, axis=1)]
        out_cos[start : start + len(batch), :take] = np.take_along_axis(cos, order, axis=1)
    return out_ids, out_cos


def chunk_vectors(dense: Any, ids: np.ndarray) -> np.ndarray:
    """The vectors the measure compares: each chunk's vector (a windowed chunk's pooled one), unit length."""
    vectors = np.asarray(dense.vectors(ids), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0))


def measure(dense: Any, k: int, previous: Hubness | None = None) -> Hubness:
    """The table for every chunk ``dense`` holds: ``previous``'s updated where few chunks changed,
    else every chunk searched against every other."""
    ids = np.sort(np.asarray(dense.ids(), dtype=np.int64))
    vectors = chunk_vectors(dense, ids)
    if previous is not None and previous.k == k and len(ids):
        updated = _update(previous, ids, vectors, k)
        if updated is not None:
            return updated
    neighbours, cosines = _top_k(vectors, ids, np.arange(len(ids)), k)
    return Hubness(ids, neighbours, cosines, k)


def _update(previous: Hubness, ids: np.ndarray, vectors: np.ndarray, k: int) -> Hubness | None:
    """``previous`` brought to ``ids``: new chunks searched, kept ones merged with the new chunks'
    cosines, those that lost a neighbour searched again; None when too much changed."""
    added = np.setdiff1d(ids, previous.ids)
    removed = np.setdiff1d(previous.ids, ids)
    if len(added) + len(removed) > REDO_SHARE * len(ids):
        return None
    keep = np.isin(previous.ids, ids)
    neighbours, cosines = previous.neighbours[keep].copy(), previous.cosines[keep].copy()
    kept_ids = previous.ids[keep]
    rows: np.ndarray = np.asarray(np.searchsorted(ids, kept_ids))  # kept chunks' places in the new order
    lost = np.isin(neighbours, removed).any(axis=1) | (neighbours == -1).any(axis=1)
    if len(added):  # the kept rows that stay: merged with their cosines to the new chunks
        new_at: np.ndarray = np.asarray(np.searchsorted(ids, added))
        merged_ids = np.concatenate([neighbours, np.broadcast_to(added, (len(rows), len(added)))], axis=1)
        merged_cos = np.concatenate([cosines, vectors[rows] @ vectors[new_at].T], axis=1)
        order = np.lexsort((merged_ids, -merged_cos), axis=1)[:, :k]
        neighbours = np.take_along_axis(merged_ids, order, axis=1)
        cosines = np.take_along_axis(merged_cos, order, axis=1).astype(np.float32)
    out_ids = np.full((len(ids), k), -1, dtype=np.int64)
    out_cos = np.full((len(ids), k), -np.inf, dtype=np.float32)
    out_ids[rows], out_cos[rows] = neighbours, cosines
    redo = np.union1d(np.searchsorted(ids, added), rows[lost]).astype(np.int64)
    if len(redo):
        out_ids[redo], out_cos[redo] = _top_k(vectors, ids, redo, k)
    return Hubness(ids, out_ids, out_cos, k)


def write_table(
    directory: Path, name: str, arrays: dict[str, np.ndarray], version: int = FORMAT_VERSION
) -> None:
    """``arrays`` and their format ``version`` written as ``directory/name`` (``.npz``), atomically."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, format=np.array([version]), **arrays)  # type: ignore[arg-type]
        os.replace(tmp, Path(directory) / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_table(
    directory: Path, name: str, what: str, keys: tuple[str, ...], version: int = FORMAT_VERSION
) -> dict[str, np.ndarray] | None:
    """The ``keys`` arrays of ``directory/name``; None when it is another format than ``version`` (the
    next build writes this one). Missing or unreadable: a CorruptIndexError naming ``what``."""
    path = Path(directory) / name
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"][0]) != version:
                return None
            return {key: data[key] for key in keys}
    except FileNotFoundError:
        raise CorruptIndexError(f"the {what} {path} named by the manifest is missing") from None
    except (OSError, ValueError, KeyError) as exc:
        raise CorruptIndexError(f"the {what} {path} cannot be read ({exc})") from None


def save(table: Hubness, directory: Path, seconds: float) -> dict[str, Any]:
    """Write ``hubness.npz`` into ``directory`` (atomically); returns the manifest entry."""
    write_table(directory, FILE, {"ids": table.ids, "neighbours": table.neighbours, "cosines": table.cosines})
    return {
        MANIFEST_KEY: {
            "k": table.k,
            "chunks": len(table),
            "format": FORMAT_VERSION,
            "seconds": round(seconds, 3),
        }
    }


def load(directory: Path, manifest: dict[str, Any]) -> Hubness | None:
    """The version's table; None when its manifest names none (built before it, or over the cap).
    A table the manifest names that is missing or unreadable is a CorruptIndexError."""
    entry = manifest.get(MANIFEST_KEY)
    if not isinstance(entry, dict):
        return None
    data = read_table(directory, FILE, "hubness table", ("ids", "neighbours", "cosines"))
    if data is None:
        return None
    table = Hubness(data["ids"], data["neighbours"], data["cosines"], int(entry.get("k", 0)))
    n = len(table.ids)
    if table.neighbours.shape != (n, table.k) or table.cosines.shape != (n, table.k) or table.k <= 0:
        path = Path(directory) / FILE
        raise CorruptIndexError(f"the hubness table {path} does not match its manifest entry")
    return table


def for_build(
    index: Any, dense: Any, versions: Any, carried_from: int | None
) -> tuple[Hubness | None, float]:
    """The table a build writes (None past ``index.hubness_max_chunks`` or for an empty index) and
    the seconds it took. ``carried_from``: the live version whose dense index the build updated (the
    same model's vectors), whose table is updated instead of searched again; None: a new index."""
    if len(dense) == 0 or len(dense) > index.hubness_max_chunks:
        return None, 0.0
    start = time.perf_counter()
    previous = None
    if carried_from is not None:
        try:
            previous = load(versions.directory(carried_from), versions.manifest(carried_from))
        except CorruptIndexError:
            previous = None  # damaged: searched again from scratch
    table = measure(dense, index.hubness_k, previous)
    return table, time.perf_counter() - start


class HubCorrected:
    """A version's dense index that ranks and scores by CSLS: ``2 cos(q, x) - r_x``. Every other
    attribute is the wrapped index's."""

    def __init__(self, dense: Any, radii: Radii) -> None:
        self.inner = dense
        self.radii = radii

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __len__(self) -> int:
        return len(self.inner)

    def score(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        return 2.0 * self.inner.score(query, ids) - self.radii.of(ids)

    def search(self, query: np.ndarray, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]:
        hits = self.inner.search(query, k * WIDEN, allowed_ids)
        if not hits:
            return []
        ids = np.array([h.id for h in hits], dtype=np.int64)
        scores = 2.0 * np.array([h.score for h in hits]) - self.radii.of(ids)
        order = np.lexsort((ids, -scores))[:k]
        return [Hit(int(ids[i]), float(scores[i])) for i in order]


def radii_of(table: Hubness | None) -> Radii | None:
    return None if table is None else Radii(table.ids, table.radius)


NO_TABLE = (
    "hubness: this index version has no hubness table (built before it, or more chunks than "
    "index.hubness_max_chunks): dense ranks by cosine; `hybrid-rag rebuild` writes one"
)


def corrected(live: LiveIndex, on: bool, tracer: Tracer) -> LiveIndex:
    """``live`` with its dense index hub-corrected when ``on`` (``features.hubness``) and the version
    has a table; without one, ``live`` as it is and a note in the trace."""
    return with_radii(live, getattr(live, "hubness", None) if on else None, on, NO_TABLE, tracer)


def with_radii(live: LiveIndex, radii: Radii | None, on: bool, missing: str, tracer: Tracer) -> LiveIndex:
    """``live`` with its dense index scoring ``2 cos - r`` by ``radii`` when ``on``; ``on`` without
    ``radii`` (the version has none): ``live`` as it is and the note ``missing`` in the trace."""
    if not on:
        return live
    if radii is None:
        tracer.note(missing)
        return live
    return replace(live, dense=HubCorrected(live.dense, radii))  # type: ignore[arg-type]  # it reads as one
