"""The store's documents: listings and the ingest's one-transaction write."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
from sqlalchemy import func, select, update

from hybrid_rag.store import reference_rows, symbol_rows
from hybrid_rag.store.records import DocumentRecord, FileChunks
from hybrid_rag.store.rows import (
    _INDEXED,
    _LIVE,
    SPAN_COLUMNS,
    _at,
    _batches,
    _chunk_lang,
    _document_record,
    _json_or_none,
    _live_chunk_pages,
)
from hybrid_rag.store.schema import _Chunk, _Document
from hybrid_rag.store.states import StoreStates
from hybrid_rag.types import fields_of


class DocumentRows(StoreStates):
    """Documents: listing them, and the one write of an ingest (``write_files``) with its
    near-duplicate bookkeeping."""

    def document_hashes(self) -> dict[str, str]:
        """path -> sha256 of every stored document."""
        with self._session() as s:
            return dict(s.execute(select(_Document.path, _Document.sha256).where(_LIVE)).all())

    def documents(self, collection: str | None = None, *, state: int | None = None) -> list[DocumentRecord]:
        """The documents of the current state, or of store state ``state`` (what an index version
        built from it serves: rows written after it or retired by then are left out)."""
        with self._session() as s:
            query = select(_Document).where(_LIVE if state is None else _at(state)).order_by(_Document.path)
            if collection is not None:
                query = query.where(_Document.collection == collection)
            records = [_document_record(d) for d in s.scalars(query)]
        langs = self.document_languages(state=state) if records else {}
        return [replace(r, languages=langs.get(r.id, {})) for r in records]

    def documents_by_id(self, ids: Iterable[int]) -> dict[int, DocumentRecord]:
        """id -> the document row (any revision, retired or not) of each id that exists."""
        wanted = sorted(set(ids))
        out: dict[int, DocumentRecord] = {}
        with self._session() as s:
            for batch in _batches(wanted):
                rows = s.scalars(select(_Document).where(_Document.id.in_(batch)))
                out.update((d.id, _document_record(d)) for d in rows)
        return out

    def path_bounds(self) -> tuple[str | None, str | None]:
        """The first and the last stored absolute document path in sort order (None, None when
        there is none; an import's or a dataset's document ids are not paths)."""
        absolute = _Document.path.startswith("/")
        with self._session() as s:
            query = select(func.min(_Document.path), func.max(_Document.path)).where(absolute)
            first, last = s.execute(query).one()
            return first, last

    def chunk_counts(self) -> dict[int, int]:
        """document id -> its number of chunks (documents without chunks are left out)."""
        with self._session() as s:
            rows = s.execute(
                select(_Chunk.document_id, func.count(_Chunk.id)).where(_INDEXED).group_by(_Chunk.document_id)
            )
            return {int(d): int(n) for d, n in rows}

    def write_files(
        self,
        files: Sequence[FileChunks],
        *,
        collection: str,
        delete_paths: Iterable[str] = (),
        embeddings: Mapping[str, np.ndarray] | None = None,
        model: str = "",
    ) -> list[int]:
        """Replace the given files' documents and chunks, delete others, cache embeddings: one
        transaction, one new store state (the replaced and deleted rows are retired, not dropped).

        Returns the new chunk ids in the order of ``files`` and their spans.
        """
        now = datetime.now(timezone.utc)
        new_ids: list[int] = []
        langs = [  # each chunk's natural language, found before the write lock is taken
            [_chunk_lang(sp, fc.file) for sp in fc.spans] for fc in files
        ]
        with self._session() as s, s.begin():
            generation = self._advance(s)
            paths = [fc.file.path for fc in files] + list(delete_paths)
            for batch in _batches(paths):
                s.execute(
                    update(_Document)
                    .where(_Document.path.in_(batch), _LIVE)
                    .values(retired=generation)
                    .execution_options(synchronize_session=False)
                )
            for fc, file_langs in zip(files, langs, strict=True):
                f = fc.file
                doc = _Document(
                    path=f.path,
                    collection=collection,
                    sha256=f.sha256,
                    size=f.size,
                    mtime=f.mtime,
                    source_type=f.source_type.value,
                    language=f.language,
                    ingested_at=now,
                    meta=_json_or_none(f.meta),
                    created=generation,
                )
                s.add(doc)
                s.flush()
                rows = [
                    _Chunk(
                        document_id=doc.id,
                        position=i,
                        **fields_of(sp, *SPAN_COLUMNS),
                        meta=_json_or_none(sp.meta),
                        duplicate_of=fc.duplicate_of.get(i),
                        lang=lang,
                    )
                    for i, (sp, lang) in enumerate(zip(fc.spans, file_langs, strict=True))
                ]
                s.add_all(rows)
                s.flush()
                new_ids.extend(r.id for r in rows if r.duplicate_of is None)
                if fc.symbols:
                    held = [(r.id, r.start_line, r.end_line) for r in rows]
                    s.add_all(symbol_rows.symbol_rows(doc.id, held, fc.symbols, generation))
                reference_rows.write(s, doc.id, fc.references, generation)
            if embeddings:
                self._put_embeddings(s, model, embeddings)
        return new_ids

    def iter_dedupe_rows(self, batch_size: int = 2000) -> Iterator[tuple[str, str, str, str, str]]:
        """(sha256, text, path, collection, document meta JSON or "") of every indexed chunk of the
        current state, in id order: what a near-duplicate check compares new chunks with."""
        cols = (_Chunk.id, _Chunk.sha256, _Chunk.text, _Document.path, _Document.collection, _Document.meta)
        for rows in _live_chunk_pages(self._session, cols, batch_size):
            for _id, sha, text, path, collection, meta in rows:
                yield sha, text, path, collection, meta or ""

    def orphaned_duplicates(self) -> list[tuple[int, str, str, str, str]]:
        """(chunk id, sha256, text, collection, document meta JSON or "") of the current state's
        dropped near-duplicates whose kept chunk is gone (deleted, or edited away) from their
        collection and metadata, in id order: each must be indexed again or matched anew."""
        kept = _Chunk.__table__.alias("kept")
        owner = _Document.__table__.alias("owner")
        held = (
            select(kept.c.id)
            .select_from(kept.join(owner, kept.c.document_id == owner.c.id))
            .where(
                kept.c.sha256 == _Chunk.duplicate_of,
                kept.c.duplicate_of.is_(None),
                owner.c.retired.is_(None),
                owner.c.collection == _Document.collection,
                func.coalesce(owner.c.meta, "") == func.coalesce(_Document.meta, ""),
            )
            .exists()
        )
        with self._session() as s:
            query = (
                select(_Chunk.id, _Chunk.sha256, _Chunk.text, _Document.collection, _Document.meta)
                .join(_Document)
                .where(_LIVE, _Chunk.duplicate_of.is_not(None), ~held)
                .order_by(_Chunk.id)
            )
            return [(i, sha, text, c, m or "") for i, sha, text, c, m in s.execute(query)]

    def rehome_duplicates(self, decisions: Mapping[int, str | None]) -> None:
        """Index again (None) or point at another kept chunk the dropped near-duplicates ``decisions``
        names, in one transaction and one new store state (so the next build indexes them). No
        index version holds such a chunk, so none reads it changed."""
        if not decisions:
            return
        with self._session() as s, s.begin():
            self._advance(s)
            for chunk_id, target in decisions.items():
                s.execute(
                    update(_Chunk)
                    .where(_Chunk.id == chunk_id)
                    .values(duplicate_of=target)
                    .execution_options(synchronize_session=False)
                )
