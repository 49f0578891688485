"""BM25 segments: immutable postings of raw term frequencies, the Lucene model.

A segment holds a batch of documents (chunk ids) as a term-by-document matrix of term counts in
CSC form (per term: the rows holding it, ascending, and its count there) and each document's
length in terms. It stores no score: BM25's idf and length normalisation depend on corpus-wide
statistics (N, average length, df) that every ingest changes, so a precomputed score matrix (what
bm25s keeps) would be wrong for every older segment after one update. Scores are computed at query
time from the statistics of the live documents of all segments (``indices/segmented.py``).

On disk a segment is ``<name>.npz`` (arrays, loaded with ``allow_pickle=False``) and
``<name>.terms.json`` (its vocabulary, column order). Segment files never change once written, so
a new index version hard-links the files of the segments it keeps (``link_or_copy``).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hybrid_rag.private_files import open_private

ARRAYS = ("ids", "lengths", "indptr", "rows", "tf")


@dataclass(frozen=True)
class Segment:
    """Documents ``ids`` (row order) with their term counts; ``rows`` ascend within each term."""

    name: str
    ids: np.ndarray  # int64 chunk ids
    lengths: np.ndarray  # int64 indexed terms a document
    terms: tuple[str, ...]  # column -> term
    indptr: np.ndarray  # int64, len(terms) + 1
    rows: np.ndarray  # int32 document rows, ascending within a column
    tf: np.ndarray  # int32 term counts
    vocab: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.vocab and self.terms:
            object.__setattr__(self, "vocab", {t: i for i, t in enumerate(self.terms)})

    def __len__(self) -> int:
        return len(self.ids)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, counts) of ``term`` in this segment; empty arrays if it does not occur."""
        col = self.vocab.get(term)
        if col is None:
            return self.rows[:0], self.tf[:0]
        start, end = int(self.indptr[col]), int(self.indptr[col + 1])
        return self.rows[start:end], self.tf[start:end]


def new_name() -> str:
    return f"seg-{uuid.uuid4().hex[:16]}"


def segment_from_docs(ids: np.ndarray, docs: Sequence[Sequence[str]]) -> Segment:
    """A segment of ``docs`` (each a list of indexed terms) under chunk ``ids``."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    terms = sorted({t for doc in docs for t in doc})
    vocab = {t: i for i, t in enumerate(terms)}
    cols = np.fromiter((vocab[t] for doc in docs for t in doc), dtype=np.int64, count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
    return _from_triples(ids, lengths, tuple(terms), rows, cols, np.ones(len(cols), dtype=np.int64), vocab)


def _from_triples(
    ids: np.ndarray,
    lengths: np.ndarray,
    terms: tuple[str, ...],
    rows: np.ndarray,
    cols: np.ndarray,
    counts: np.ndarray,
    vocab: dict[str, int] | None = None,
) -> Segment:
    """A segment from (row, column, count) triples; repeated pairs add up."""
    n = max(len(ids), 1)
    key = cols * n + rows
    order = np.argsort(key, kind="stable")
    key, counts = key[order], counts[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.empty(0, dtype=np.int64)
    unique = key[starts]
    tf = np.add.reduceat(counts, starts) if len(key) else counts
    indptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(unique // n, minlength=len(terms)), out=indptr[1:])
    return Segment(
        new_name(),
        ids,
        np.asarray(lengths, dtype=np.int64),
        terms,
        indptr,
        (unique % n).astype(np.int32),
        tf.astype(np.int32),
        vocab or {},
    )


def merge_segments(segments: Sequence[Segment], live: Sequence[np.ndarray]) -> Segment:
    """One segment of the live documents of ``segments`` (in their order): tombstones purged."""
    terms = sorted(set().union(*(s.terms for s in segments))) if segments else []
    vocab = {t: i for i, t in enumerate(terms)}
    ids, lengths, rows, cols, counts = [], [], [], [], []
    offset = 0
    for seg, alive in zip(segments, live, strict=True):
        new_row = np.full(len(seg), -1, dtype=np.int64)
        new_row[alive] = np.arange(offset, offset + int(alive.sum()))
        offset += int(alive.sum())
        ids.append(seg.ids[alive])
        lengths.append(seg.lengths[alive])
        col_map = np.fromiter((vocab[t] for t in seg.terms), dtype=np.int64, count=len(seg.terms))
        seg_cols = np.repeat(col_map, np.diff(seg.indptr))
        keep = alive[seg.rows]
        rows.append(new_row[seg.rows[keep]])
        cols.append(seg_cols[keep])
        counts.append(seg.tf[keep].astype(np.int64))

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    rows_all, cols_all = cat(rows), cat(cols)
    used = np.unique(cols_all)  # terms whose every holder was deleted leave the vocabulary
    remap = np.full(len(terms) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    kept_terms = tuple(terms[i] for i in used.tolist())
    return _from_triples(cat(ids), cat(lengths), kept_terms, rows_all, remap[cols_all], cat(counts))


def save_segment(segment: Segment, directory: Path) -> list[str]:
    """Write the segment's two files into ``directory``; returns their names."""
    arrays = {name: getattr(segment, name) for name in ARRAYS}
    npz = Path(directory) / f"{segment.name}.npz"
    with open_private(npz) as handle:  # 0600, as every index file
        np.savez(handle, **arrays)
    terms = Path(directory) / f"{segment.name}.terms.json"
    with open_private(terms) as handle:
        handle.write(json.dumps(list(segment.terms), ensure_ascii=False).encode("utf-8"))
    return [npz.name, terms.name]


def segment_files(name: str) -> list[str]:
    return [f"{name}.npz", f"{name}.terms.json"]


def load_segment(directory: Path, name: str) -> Segment:
    with np.load(Path(directory) / f"{name}.npz", allow_pickle=False) as data:
        arrays = {key: data[key] for key in ARRAYS}
    terms = json.loads((Path(directory) / f"{name}.terms.json").read_text(encoding="utf-8"))
    return Segment(name=name, terms=tuple(terms), **arrays)


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link (segment files are immutable), or a copy where the file system has none."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
