"""The store's chunks: by id, by filter, by document, in batches; hashes by state."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
from sqlalchemy import func, or_, select
from sqlalchemy.sql.elements import ColumnElement

from hybrid_rag.filters import FilterExpr
from hybrid_rag.filters.cost import cost_of
from hybrid_rag.store.filter_sql import to_sql
from hybrid_rag.store.rows import (
    _CACHED_FILTER_TERMS,
    _INDEXED,
    _LIVE,
    CHUNK_ROW,
    _batches,
    _chunk,
    _generation,
    _live_chunk_pages,
    _only_line,
    chunk_of_row,
)
from hybrid_rag.store.schema import CHUNKS, DOCUMENTS, _Chunk, _Document
from hybrid_rag.store.sessions import StoreSessions
from hybrid_rag.store.statement_timeout import bound_to_deadline
from hybrid_rag.types import Chunk


class ChunkRows(StoreSessions):
    """Chunks: by id, by filter, by document, in batches, and their hashes by state."""

    def chunk_count(self) -> int:
        """Chunks in the current state."""
        with self._session() as s:
            return s.scalar(select(func.count(_Chunk.id)).join(_Document).where(_LIVE, _INDEXED)) or 0

    def all_chunk_ids(self) -> np.ndarray:
        """Ids of the current state's chunks, ascending."""
        with self._session() as s:
            query = select(_Chunk.id).join(_Document).where(_LIVE, _INDEXED).order_by(_Chunk.id)
            return np.fromiter(s.scalars(query), dtype=np.int64)

    def chunks(self, ids: Iterable[int]) -> dict[int, Chunk]:
        """Chunks by id, retired revisions included (an older index version reads what it indexed);
        ids garbage-collected or never written are absent from the answer."""
        out: dict[int, Chunk] = {}
        with self._session() as s:
            joined = CHUNKS.join(DOCUMENTS, CHUNKS.c.document_id == DOCUMENTS.c.id)
            for batch in _batches([int(i) for i in ids]):
                query = select(*CHUNK_ROW).select_from(joined).where(CHUNKS.c.id.in_(batch))
                for row in s.execute(query):
                    out[row.id] = chunk_of_row(row)
        return out

    def chunk_ids_matching(self, expr: FilterExpr) -> np.ndarray:
        """Ids (int64, ascending) of the chunks that satisfy a filter expression, retired revisions
        included (the live index holds the ids of its own state only); empty if none do."""
        # a long filter's statement is compiled afresh, not kept in SQLAlchemy's cache (each hostile
        # filter's megabytes of SQL stayed there: the server grew and never shrank)
        cached = cost_of(expr).terms <= _CACHED_FILTER_TERMS
        return self._chunk_ids_where(to_sql(expr), cached=cached)

    def single_line_chunk_ids(self, lines: Sequence[tuple[int, int]]) -> list[int]:
        """Ids, in id order, of the chunks that hold only one line, for each (document id, line)."""
        if not lines:
            return []
        return self._chunk_ids_where(or_(*(_only_line(*line) for line in lines))).tolist()

    def _chunk_ids_where(self, condition: ColumnElement[bool], *, cached: bool = True) -> np.ndarray:
        """Ids of the chunks (joined with their documents) that satisfy a SQL condition over
        ``DOCUMENTS`` and ``CHUNKS`` columns, in id order; within the request's deadline."""
        with self._session() as s:
            query = (
                select(CHUNKS.c.id)
                .select_from(CHUNKS.join(DOCUMENTS, CHUNKS.c.document_id == DOCUMENTS.c.id))
                .where(condition, CHUNKS.c.duplicate_of.is_(None))
                .order_by(CHUNKS.c.id)
            )
            if not cached:
                s.connection(execution_options={"compiled_cache": None})
            bound_to_deadline(s)
            return np.fromiter(s.scalars(query), dtype=np.int64)

    def document_chunks(self, document_id: int, *, duplicates: bool = False) -> list[Chunk]:
        """Every indexed chunk of one document, in position order (for parent / neighbour context);
        ``duplicates``: the dropped near-duplicates too (every line of the file)."""
        with self._session() as s:
            query = (
                select(_Chunk, _Document)
                .join(_Document)
                .where(_Chunk.document_id == document_id)
                .order_by(_Chunk.position)
            )
            if not duplicates:
                query = query.where(_INDEXED)
            return [_chunk(c, d) for c, d in s.execute(query)]

    def iter_chunks(self, batch_size: int = 2000) -> Iterator[Chunk]:
        """Every chunk of the current state in id order, a batch at a time (for index builds)."""
        for rows in _live_chunk_pages(self._session, (_Chunk, _Document), batch_size):
            for chunk, doc in rows:
                yield _chunk(chunk, doc)

    def chunk_paths(self) -> dict[int, str]:
        """chunk id -> its document's stored path, for the current state's chunks (what the dense
        fill orders by: ``ingest/embed_order.py``)."""
        with self._session() as s:
            query = select(_Chunk.id, _Document.path).join(_Document).where(_LIVE, _INDEXED)
            return dict(s.execute(query).all())

    def chunk_hashes(self) -> dict[int, str]:
        """chunk id -> sha256 of the current state's chunks."""
        return self.state_hashes()[1]

    def state_hashes(self) -> tuple[int, dict[int, str]]:
        """The store state and its chunks' hashes, read together (what an index build indexes)."""
        with self._session() as s:
            query = (
                select(_Chunk.id, _Chunk.sha256).join(_Document).where(_LIVE, _INDEXED).order_by(_Chunk.id)
            )
            return _generation(s), dict(s.execute(query).all())
