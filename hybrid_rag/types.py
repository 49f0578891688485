"""Immutable data passed between stages.

Every stage takes these and returns new ones (``dataclasses.replace``); nothing is mutated
in place. A chunk's ``id`` is its integer primary key in SQLite, its id in Faiss and the
key of its row in BM25 (docs/contributing.md#one-row-id).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, TypeVar

from hybrid_rag.errors import ConfigError
from hybrid_rag.locators import Locator, cited

_E = TypeVar("_E", bound="ConfigEnum")


def fields_of(obj: object, *names: str) -> dict[str, Any]:
    """``{name: obj.name}`` for each of ``names``, in that order: the plain part of a ``to_dict``."""
    return {name: getattr(obj, name) for name in names}


class ConfigEnum(str, Enum):
    """A mode named in the config; ``from_str`` lists the valid values when it fails
    (docs/contributing.md#modes-from-str)."""

    @classmethod
    def from_str(cls: type[_E], value: str) -> _E:
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise ConfigError(f"unknown {cls.__name__} {value!r}; valid values: {valid}") from None


class SourceType(ConfigEnum):
    CODE = "code"
    TEXT = "text"


class ParentMode(ConfigEnum):
    """What ``features.parent_context`` attaches: neighbouring chunks, or the enclosing definition
    (code) or section (Markdown, reST)."""

    NEIGHBOURS = "neighbours"
    ENCLOSING = "enclosing"

    @classmethod
    def from_str(cls, value: str) -> ParentMode:
        if value == "definition":  # the name before sections joined definitions
            return cls.ENCLOSING
        return super().from_str(value)


@dataclass(frozen=True)
class LoadedFile:
    """A decoded text or source file, ready to chunk."""

    path: str  # absolute resolved POSIX path (a zip member: "<zip path>/<member>"; a BEIR doc: its id)
    text: str
    sha256: str  # of the raw bytes
    size: int
    mtime: float
    source_type: SourceType
    language: str  # "python", "markdown", "text", ...
    meta: Mapping[str, Any] = field(default_factory=dict)  # front matter, an import's or the API's fields
    locators: tuple[Locator, ...] = ()  # a converted document's pages/slides/cells/rows, by text line


@dataclass(frozen=True)
class SkippedFile:
    """A file the loader passed over, with the reason shown in the ingest summary."""

    path: str
    reason: str


@dataclass(frozen=True)
class ChunkSpan:
    """A piece of a file as the chunker cuts it: whole lines, 1-based inclusive."""

    text: str
    start_line: int
    end_line: int
    token_count: int
    sha256: str
    meta: Mapping[str, Any] = field(default_factory=dict)  # an imported row's own fields
    lang: str | None = None  # its natural language, decided once at ingest (None: the store decides)


@dataclass(frozen=True)
class Chunk:
    """A stored chunk; ``id`` is the same integer in SQLite, Faiss and BM25."""

    id: int
    document_id: int
    path: str
    position: int
    start_line: int
    end_line: int
    text: str
    token_count: int
    sha256: str
    source_type: SourceType
    language: str
    collection: str
    meta: Mapping[str, Any] = field(default_factory=dict)  # the document's metadata, the chunk's own over it
    lang: str = "und"  # its natural language, detected at ingest (hybrid_rag/lang): "en", "ru", "und"


@dataclass(frozen=True)
class Hit:
    """One index's answer: a chunk id and that index's raw score."""

    id: int
    score: float


@dataclass(frozen=True)
class ScoredChunk:
    """A chunk with its final score and the score every stage gave it."""

    chunk: Chunk
    score: float
    breakdown: Mapping[str, float] = field(default_factory=dict)
    # "" when its document's file on disk is what was indexed (or it is no file); else "changed" or
    # "missing": the quoted lines may no longer be on disk (``ingest/freshness.py``)
    stale: str = ""

    @property
    def id(self) -> int:
        return self.chunk.id

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def path(self) -> str:
        return self.chunk.path

    @property
    def start_line(self) -> int:
        return self.chunk.start_line

    @property
    def end_line(self) -> int:
        return self.chunk.end_line

    @property
    def source_type(self) -> SourceType:
        return self.chunk.source_type

    @property
    def collection(self) -> str:
        return self.chunk.collection

    @property
    def citation(self) -> str:
        return f"{self.chunk.path}:{self.chunk.start_line}-{self.chunk.end_line}"

    @property
    def located_citation(self) -> str:
        """``citation`` plus a converted document's place (``locators.cited``): ``manual.pdf:7-8 (p.3)``."""
        return cited(self.chunk.path, self.chunk.start_line, self.chunk.end_line, self.chunk.meta)

    @property
    def stale_note(self) -> str:
        """The line a surface shows under a stale hit; "" when it is not stale."""
        if not self.stale:
            return ""
        how = "deleted from disk" if self.stale == "missing" else "changed on disk"
        return f"stale: {self.chunk.path} {how} since indexed; run hybrid-rag ingest"

    def to_dict(self) -> dict[str, object]:
        """The ``--json``/HTTP shape; its ``citation`` is ``located_citation``; ``stale`` (with
        ``stale_reason`` "changed" or "missing" when true): its file is not what was indexed."""
        c = self.chunk
        return {
            "id": c.id,
            "path": c.path,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "citation": self.located_citation,
            "source_type": c.source_type.value,
            "language": c.language,
            "collection": c.collection,
            "score": self.score,
            "breakdown": dict(self.breakdown),
            "text": c.text,
            **({"meta": dict(c.meta)} if c.meta else {}),
            "stale": bool(self.stale),
            **({"stale_reason": self.stale} if self.stale else {}),
        }


@dataclass(frozen=True)
class FileGroup:
    """A file in a result grouped by file (``group="file"``, ``retrieval/grouping.py``): its score from
    its units' evidence and its best units, best first."""

    path: str
    document_id: int
    score: float
    units: tuple[ScoredChunk, ...]

    def to_dict(self, matches: Mapping[int, tuple[int, int]] | None = None) -> dict[str, object]:
        """The ``--json``/HTTP shape of a file: where it is, its score, and its units' ids, line ranges
        and scores (with the lines that match the query best, from ``matches``)."""
        best = self.units[0]
        units = []
        for u in self.units:
            row: dict[str, object] = {
                "id": u.id,
                "start_line": u.start_line,
                "end_line": u.end_line,
                "citation": u.located_citation,
                "score": u.score,
            }
            if matches and u.id in matches:
                row["match"] = {"start_line": matches[u.id][0], "end_line": matches[u.id][1]}
            units.append(row)
        return {
            "path": self.path,
            "score": self.score,
            "source_type": best.source_type.value,
            "language": best.chunk.language,
            "collection": best.collection,
            "units": units,
            "stale": any(u.stale for u in self.units),
        }


@dataclass(frozen=True)
class StageTiming:
    stage: str
    seconds: float
    note: str = ""


@dataclass(frozen=True)
class Trace:
    """What each stage took, and anything a stage wants the user to know (a skipped stage)."""

    timings: tuple[StageTiming, ...] = ()
    notes: tuple[str, ...] = ()
    dense: str = ""  # what the dense index lacks: "building, 41%" on a BM25-first ingest's partial version
    # what the index lacks to read this question at all, and the fix (retrieval/reading.py): a
    # Russian question over English text with an English-only dense model
    unread: str = ""
    # the roles and folders the dense index lacks, one line (indices/coverage.py ``pending_line``):
    # "not dense yet: test 120 chunks (in tests/ 120); never embedded (ingest.embed_never): vendored 3"
    not_dense: str = ""
    # the model of the vector set that answered when it is not the index's first one: the second
    # set (indices/second_dense.py) answers a question only its model reads
    vectors: str = ""

    def seconds(self, stage: str) -> float:
        return sum(t.seconds for t in self.timings if t.stage == stage)

    @property
    def total_seconds(self) -> float:
        return sum(t.seconds for t in self.timings)

    def to_dict(self) -> dict[str, object]:
        return {
            "timings": [
                {"stage": t.stage, "ms": round(t.seconds * 1000, 3), "note": t.note} for t in self.timings
            ],
            "notes": list(self.notes),
            **({"dense": self.dense} if self.dense else {}),
            **({"unread": self.unread} if self.unread else {}),
            **({"not_dense": self.not_dense} if self.not_dense else {}),
            **({"vectors": self.vectors} if self.vectors else {}),
        }


class Tracer:
    """Collects stage timings while a query runs; ``freeze()`` gives the immutable Trace."""

    def __init__(self) -> None:
        self._timings: list[StageTiming] = []
        self._notes: list[str] = []
        self.dense = ""  # Trace.dense
        self.unread = ""  # Trace.unread
        self.not_dense = ""  # Trace.not_dense
        self.vectors = ""  # Trace.vectors

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._timings.append(StageTiming(name, time.perf_counter() - start))

    def note(self, message: str) -> None:
        self._notes.append(message)

    def freeze(self) -> Trace:
        notes = tuple(self._notes)
        return Trace(tuple(self._timings), notes, self.dense, self.unread, self.not_dense, self.vectors)


@dataclass(frozen=True)
class ParentContext:
    """Lines ``start_line..end_line`` of ``path`` around chunk ``chunk_id``; ``kind`` is the mode used."""

    chunk_id: int
    path: str
    start_line: int
    end_line: int
    text: str
    kind: str = ParentMode.NEIGHBOURS.value

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class QueryResult:
    """Ranked chunks, the trace of how they were found, and (when asked) each one's parent context."""

    query: str
    mode: str
    chunks: tuple[ScoredChunk, ...]
    trace: Trace
    index_version: int | None = None
    parents: Mapping[int, ParentContext] = field(default_factory=dict)
    lang: str | None = None  # the query's natural language as it was read (hybrid_rag/lang/query.py)
    # chunk id -> the 1-based line range of its text that matches the query best (retrieval/matching.py)
    matches: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    # with ``group="file"`` (``retrieval/grouping.py``): the files ranked by their units' evidence; the
    # chunks are then those files' units, file by file
    files: tuple[FileGroup, ...] | None = None

    def to_dict(self) -> dict[str, object]:
        """The ``--json``/HTTP shape; each hit's ``match`` is the range of its lines that match the
        query best (``matches``, found by the retriever), which a result list shows instead of its
        first lines."""
        results = []
        for c in self.chunks:
            row = c.to_dict()
            if c.id in self.matches:
                first, last = self.matches[c.id]
                row["match"] = {"start_line": first, "end_line": last}
            if c.id in self.parents:
                row["parent"] = asdict(self.parents[c.id])
            results.append(row)
        return {
            "query": self.query,
            "mode": self.mode,
            "index_version": self.index_version,
            **({"lang": self.lang} if self.lang is not None else {}),
            **({"dense": self.trace.dense} if self.trace.dense else {}),
            **({"unread": self.trace.unread} if self.trace.unread else {}),  # the index cannot read it
            **({"not_dense": self.trace.not_dense} if self.trace.not_dense else {}),  # BM25-only roles
            **({"vectors": self.trace.vectors} if self.trace.vectors else {}),  # the second set answered
            "results": results,
            **({"files": [f.to_dict(self.matches) for f in self.files]} if self.files is not None else {}),
            "trace": self.trace.to_dict(),
        }
