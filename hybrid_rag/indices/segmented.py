"""Segment-based BM25: a base segment, small delta segments and a deletion bitmap (Lucene's model).

An ingest adds one delta segment for its new chunks and tombstones the chunks it replaced or
deleted; nothing older is rewritten. Scores are computed at query time from the statistics of the
live documents of all segments (N, the mean length, each query term's df), with bm25s's own idf
and term-frequency functions (``bm25s.scoring``) in bm25s's float32 arithmetic and summation
order, so a search equals a from-scratch bm25s build of the same live documents bit for bit, for
all five variants (``tests/unit/test_bm25_segments_equal_a_full_build.py``).

Why not keep bm25s's precomputed score matrix per segment: each entry is idf(df, N) times a
length normalisation by the corpus's mean length, both of which every update changes; a delta's
matrix would be scored with its own statistics, and re-scoring the older segments on each update
is the full rebuild this replaces. Storing raw counts and scoring at query time is what Lucene does;
it costs a few more flops per posting than summing bm25s's matrix.

The merge policy (:func:`plan_merge`) folds deltas together when there are more than
``bm25.max_deltas`` of them, and everything into a new base when the deltas or the tombstones
reach ``bm25.merge_fraction`` of the base; ``hybrid-rag rebuild`` writes one fresh base.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.indices.segments import (
    Segment,
    link_or_copy,
    load_segment,
    merge_segments,
    save_segment,
    segment_files,
    segment_from_docs,
)
from hybrid_rag.lazy_imports import hidden_modules

NONOCCURRENCE = ("bm25l", "bm25+")  # variants whose every query term gives a floor to every document


class SegmentedBM25:
    """Segments with their live masks; scores from the live documents' statistics."""

    def __init__(
        self, variant: str, k1: float, b: float, delta: float, segments: Sequence[Segment] = (), live=None
    ) -> None:
        self.variant, self.k1, self.b, self.delta = variant, k1, b, delta
        # bm25s (with scipy) is imported on first use, not by every command that imports the
        # engine (about 0.3 s of start-up); it probes numba at import (~1.5 s): hidden, its numpy
        # scoring is what is used
        with hidden_modules("numba"):
            from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer
        self._idf = _select_idf_scorer(variant)
        self._tfc = _select_tfc_scorer(variant)
        self.segments: list[Segment] = list(segments)
        self.live: list[np.ndarray] = (
            [np.ones(len(s), dtype=bool) for s in self.segments] if live is None else list(live)
        )
        self._refresh()

    def _refresh(self) -> None:
        """Recompute the corpus statistics and row tables after the segments or masks changed."""
        self.n_docs = int(sum(int(m.sum()) for m in self.live))
        pairs = zip(self.segments, self.live, strict=True)
        self.total_length = int(sum(int(s.lengths[m].sum()) for s, m in pairs))
        self.dead = [int(len(m) - m.sum()) for m in self.live]
        sizes = [len(s) for s in self.segments]
        self.offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.all_ids = (
            np.concatenate([s.ids for s in self.segments]) if self.segments else np.empty(0, np.int64)
        )
        self.all_live = np.concatenate(self.live) if self.live else np.empty(0, dtype=bool)
        self._lookup: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def avg_length(self) -> float:
        # bm25s: np.array(lengths).mean(), an exact integer sum over N in float64: the same value
        return np.float64(self.total_length) / self.n_docs if self.n_docs else np.float64(0.0)

    def ids(self) -> np.ndarray:
        return self.all_ids[self.all_live]

    # -- changes ------------------------------------------------------------------------------

    def add(self, ids: np.ndarray, docs: Sequence[Sequence[str]]) -> None:
        """A new delta segment of ``docs`` under ``ids`` (ids must not be live already)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids) == 0:
            return
        if len(np.unique(ids)) != len(ids) or self.contains(ids).any():
            raise ValueError("BM25 segments: duplicate or already indexed chunk ids in one add")
        segment = segment_from_docs(ids, docs)
        self.segments.append(segment)
        self.live.append(np.ones(len(segment), dtype=bool))
        self._refresh()

    def delete(self, ids: np.ndarray) -> int:
        """Tombstone the live rows of ``ids`` (unknown ids are ignored); returns how many."""
        rows = self._rows_of(np.unique(np.asarray(ids, dtype=np.int64).reshape(-1)))
        rows = rows[rows >= 0]
        if len(rows) == 0:
            return 0
        for i, (start, end) in enumerate(zip(self.offsets[:-1], self.offsets[1:], strict=True)):
            mine = rows[(rows >= start) & (rows < end)] - start
            if len(mine):
                self.live[i] = self.live[i].copy()
                self.live[i][mine] = False
        self._refresh()
        return len(rows)

    def merge(self, first: int = 0) -> None:
        """Fold segments ``first..`` into one (0: everything, a new base), purging tombstones."""
        if len(self.segments) - first < 1 or (len(self.segments) - first == 1 and not self.dead[first]):
            return
        merged = merge_segments(self.segments[first:], self.live[first:])
        self.segments = [*self.segments[:first], merged]
        self.live = [*self.live[:first], np.ones(len(merged), dtype=bool)]
        self._refresh()

    # -- lookups ------------------------------------------------------------------------------

    def contains(self, ids: np.ndarray) -> np.ndarray:
        return self._rows_of(np.asarray(ids, dtype=np.int64).reshape(-1)) >= 0

    def _rows_of(self, ids: np.ndarray) -> np.ndarray:
        """The live row (over all segments) of each id, -1 where it has none: a binary search."""
        if self._lookup is None:
            rows = np.flatnonzero(self.all_live)
            order = np.argsort(self.all_ids[rows], kind="stable")
            self._lookup = (self.all_ids[rows][order], rows[order])
        held, rows = self._lookup
        if len(held) == 0:
            return np.full(len(ids), -1, dtype=np.int64)
        pos = np.searchsorted(held, ids).clip(max=len(held) - 1)
        return np.where(held[pos] == ids, rows[pos], -1)

    def known(self, terms: Sequence[str]) -> list[str]:
        """The terms some live document holds (the vocabulary a from-scratch build would have)."""
        return [t for t in terms if self._df(t) > 0]

    def _df(self, term: str) -> int:
        df = 0
        for seg, alive, dead in zip(self.segments, self.live, self.dead, strict=True):
            rows, _ = seg.postings(term)
            df += len(rows) if not dead else int(alive[rows].sum())
        return df

    # -- scoring (bm25s's arithmetic: see the module docstring) ----------------------------------

    def _term_parts(self, term: str, df: int) -> tuple[np.float32, list[tuple[np.ndarray, np.ndarray]]]:
        """(the term's non-occurrence floor, [(live rows, float32 contribution)] per segment)."""
        idf = self._idf(df, N=self.n_docs)
        avg = self.avg_length
        floor = np.float32(0.0)
        if self.variant in NONOCCURRENCE:
            tfc0 = self._tfc(tf_array=0, l_d=avg, l_avg=avg, k1=self.k1, b=self.b, delta=self.delta)
            floor = np.float32(idf * tfc0)
        idf32 = np.float32(idf)
        parts = []
        segments = zip(self.offsets[:-1], self.segments, self.live, self.dead, strict=True)
        for offset, seg, alive, dead in segments:
            rows, tf = seg.postings(term)
            if dead and len(rows):
                keep = alive[rows]
                rows, tf = rows[keep], tf[keep]
            if len(rows) == 0:
                continue
            tfc = self._tfc(
                tf_array=tf.astype(np.float32),
                l_d=seg.lengths[rows],
                l_avg=avg,
                k1=self.k1,
                b=self.b,
                delta=self.delta,
            )
            contribution = idf32 * tfc
            if self.variant in NONOCCURRENCE:
                contribution -= floor
            parts.append((rows.astype(np.int64) + offset, contribution.astype(np.float32)))
        return floor, parts

    def _parts(self, terms: Sequence[str]) -> tuple[dict[str, list], np.float32]:
        """Each known term's parts, and the floor every document gets (bm25l/bm25+)."""
        cache: dict[str, list] = {}
        floors: list[np.float32] = []
        for term in terms:
            if term not in cache:
                df = self._df(term)
                cache[term] = [np.float32(0.0), []] if df == 0 else list(self._term_parts(term, df))
                cache[term].append(df)
            if cache[term][2] and self.variant in NONOCCURRENCE:
                floors.append(cache[term][0])
        floor = np.array(floors, dtype=np.float32).sum() if floors else np.float32(0.0)
        return cache, floor

    def scores(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """float32 scores of every row (dead rows included) and whether it holds a query term."""
        cache, floor = self._parts(terms)
        scores = np.zeros(len(self.all_ids), dtype=np.float32)
        matched = np.zeros(len(self.all_ids), dtype=bool)
        for term in terms:  # query order, repeats included: bm25s's summation order
            for rows, contribution in cache[term][1]:
                scores[rows] += contribution
                matched[rows] = True
        if floor:
            scores += floor
        return scores, matched

    def scores_at(self, terms: Sequence[str], ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`scores` at ``ids`` only, the same values bit for bit: (scores, matched, present).

        Each query term's live rows are binary-searched for the ids' rows, so the cost grows with
        the terms and ids, not with the postings scored."""
        rows = self._rows_of(np.asarray(ids, dtype=np.int64).reshape(-1))
        present = rows >= 0
        cache, floor = self._parts(terms)
        out = np.zeros(len(rows), dtype=np.float32)
        matched = np.zeros(len(rows), dtype=bool)
        for term in terms:
            for term_rows, contribution in cache[term][1]:
                pos = np.searchsorted(term_rows, rows).clip(max=len(term_rows) - 1)
                hit = present & (term_rows[pos] == rows)
                out[hit] += contribution[pos[hit]]
                matched |= hit
        if floor:
            out += floor
        return out, matched, present


def plan_merge(index: SegmentedBM25, max_deltas: int, fraction: float) -> int | None:
    """Where to merge from after an update (0: into a new base, 1: the deltas together), or None.

    A merge to a new base when the deltas' documents or the tombstones reach ``fraction`` of the
    base's live documents; the deltas alone when there are more than ``max_deltas`` of them.
    """
    if len(index.segments) < 2:
        return 0 if index.segments and index.dead[0] > fraction * max(len(index.segments[0]), 1) else None
    base_live = int(index.live[0].sum())
    delta_docs = sum(len(s) for s in index.segments[1:])
    if delta_docs >= fraction * base_live or sum(index.dead) >= fraction * max(base_live, 1):
        return 0
    if len(index.segments) - 1 > max_deltas:
        return 1
    return None


def save_segmented(
    index: SegmentedBM25, folder: Path, source: Path, digests: dict[str, str]
) -> list[dict[str, Any]]:
    """Write ``index``'s segments into ``folder``: a segment already on disk in ``source`` (whose
    files' digests are known) is hard-linked, not rewritten; each tombstoned segment gets a fresh
    mask file. Returns the manifest's ``segments`` list."""
    out = []
    for seg, alive, dead in zip(index.segments, index.live, index.dead, strict=True):
        names = segment_files(seg.name)
        if all(n in digests and (source / n).is_file() for n in names):
            for name in names:
                link_or_copy(source / name, folder / name)
        else:
            save_segment(seg, folder)
        entry: dict[str, Any] = {"name": seg.name, "docs": len(seg), "dead": dead}
        if dead:
            entry["live"] = f"{seg.name}.live-{uuid.uuid4().hex[:8]}.npy"
            np.save(folder / entry["live"], alive, allow_pickle=False)
        out.append(entry)
    return out


def load_segmented(index: SegmentedBM25, folder: Path, entries: list[dict[str, Any]]) -> None:
    """Fill ``index`` with the segments (and masks) a manifest's ``segments`` list names."""
    segments, live = [], []
    for entry in entries:
        seg = load_segment(folder, entry["name"])
        alive = (
            np.load(folder / entry["live"], allow_pickle=False).astype(bool)
            if entry.get("live")
            else np.ones(len(seg), dtype=bool)
        )
        dead = int(len(alive) - alive.sum())
        if len(seg) != entry["docs"] or len(alive) != len(seg) or dead != entry["dead"]:
            raise ValueError(f"segment {entry['name']} does not match the manifest")
        segments.append(seg)
        live.append(alive)
    index.segments, index.live = segments, live
    index._refresh()
