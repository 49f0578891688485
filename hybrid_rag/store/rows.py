"""Row mappers (ORM rows to records and chunks) and the SQL helpers the store's method groups share."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from hybrid_rag.lang.detect import detect_chunk_language
from hybrid_rag.store.records import DocumentRecord
from hybrid_rag.store.schema import CHUNKS, DOCUMENTS, GENERATION, _Chunk, _Document, _Embedding, _Meta
from hybrid_rag.types import Chunk, ChunkSpan, LoadedFile, SourceType
from hybrid_rag.vectors import bad_rows

_IN_BATCH = 900  # SQLite's default limit on bound parameters is 999


def _checked_windows(row: _Embedding) -> np.ndarray | None:
    """A cached row's window matrix, or None when it is damaged: a length that is not whole rows,
    a checksum that differs, or (a row from before checksums) rows that are not unit length."""
    blob = row.vector
    if row.dimension <= 0 or len(blob) == 0 or len(blob) % (4 * row.dimension):
        return None
    if row.checksum is not None and zlib.crc32(blob) != row.checksum:
        return None
    windows = np.frombuffer(blob, dtype=np.float32).reshape(-1, row.dimension).copy()
    if row.checksum is None and bad_rows(windows).any():
        return None
    return windows


_CACHED_FILTER_TERMS = 100  # a filter over this many terms is compiled without SQLAlchemy's cache


_LIVE = _Document.retired.is_(None)  # the current state's documents


_INDEXED = _Chunk.duplicate_of.is_(None)  # not a dropped near-duplicate


def _at(state: int) -> ColumnElement[bool]:
    """The documents of store state ``state`` (a row from before schema 5 counts as written at 0)."""
    written = or_(_Document.created.is_(None), _Document.created <= state)
    return and_(written, or_(_Document.retired.is_(None), _Document.retired > state))


def _generation(s: Session) -> int:
    return int(s.scalar(select(_Meta.value).where(_Meta.key == GENERATION)) or 0)


def _batches(items: Sequence[Any], size: int = _IN_BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _live_chunk_pages(
    session: Callable[[], AbstractContextManager[Session]], columns: Sequence[Any], batch_size: int
) -> Iterator[Sequence[Any]]:
    """Rows of ``columns`` (the first ``_Chunk`` or ``_Chunk.id``) for every indexed chunk of the
    current state, in id order: ``batch_size`` rows a session, none held open between pages."""
    last = 0
    while True:
        with session() as s:
            query = (
                select(*columns)
                .join(_Document)
                .where(_Chunk.id > last, _LIVE, _INDEXED)
                .order_by(_Chunk.id)
                .limit(batch_size)
            )
            rows = s.execute(query).all()
        if not rows:
            return
        yield rows
        last = getattr(rows[-1][0], "id", rows[-1][0])


def _only_line(document_id: int, line: int) -> ColumnElement[bool]:
    """The chunks of a document that hold only line ``line``."""
    return and_(CHUNKS.c.document_id == document_id, CHUNKS.c.start_line == line, CHUNKS.c.end_line == line)


def _document_record(d: _Document) -> DocumentRecord:
    return DocumentRecord(
        d.id,
        d.path,
        d.collection,
        d.sha256,
        d.size,
        d.mtime,
        SourceType(d.source_type),
        d.language,
        d.ingested_at,
        _meta(d.meta),
    )


def _chunk_lang(span: ChunkSpan, file: LoadedFile) -> str:
    """A new chunk's natural language: the one ingest decided (``ingest/languages.py``), else
    detected here (``hybrid_rag/lang/detect.py``; a code chunk's comments')."""
    if span.lang is not None:
        return span.lang
    return detect_chunk_language(span.text, code=file.source_type is SourceType.CODE).code


SPAN_COLUMNS = ("start_line", "end_line", "text", "token_count", "sha256")  # a chunk's, as its span has them


# a chunk and its document's fields as plain columns, in ``chunk_of_row``'s order: no ORM objects
# (a query's fetch reads a hundred chunks or more; the ORM's instances and a row's attribute lookups
# by name cost most of its time: RESULTS.md#query-time)
CHUNK_ROW = (
    *(CHUNKS.c[name] for name in ("id", "document_id", "position", *SPAN_COLUMNS, "meta", "lang")),
    *(DOCUMENTS.c[name] for name in ("path", "source_type", "language", "collection", "meta")),
)


def chunk_of_row(row: Sequence[Any]) -> Chunk:
    """A :class:`Chunk` from the values of ``CHUNK_ROW``'s columns, in its order."""
    (id_, document_id, position, start, end, text, tokens, sha256, meta, lang, *document) = row
    path, source_type, language, collection, document_meta = document
    return Chunk(
        id=id_,
        document_id=document_id,
        position=position,
        start_line=start,
        end_line=end,
        text=text,
        token_count=tokens,
        sha256=sha256,
        path=path,
        source_type=SourceType(source_type),
        language=language,
        collection=collection,
        meta={**_meta(document_meta), **_meta(meta)},
        lang=lang or "und",
    )


def _chunk(c: _Chunk, d: _Document) -> Chunk:
    """A :class:`Chunk` from ORM rows of a chunk and its document."""
    own = (getattr(c, name) for name in ("id", "document_id", "position", *SPAN_COLUMNS, "meta", "lang"))
    return chunk_of_row((*own, d.path, d.source_type, d.language, d.collection, d.meta))


def _json_or_none(meta: Mapping[str, Any]) -> str | None:
    return json.dumps(dict(meta), sort_keys=True, ensure_ascii=False, default=str) if meta else None


def _meta(raw: str | None) -> dict[str, Any]:
    return json.loads(raw) if raw else {}
