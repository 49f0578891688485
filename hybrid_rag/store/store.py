"""MetadataStore: documents, chunks, cached embeddings and index versions in SQLite.

The class is its method groups (``sessions``, ``states``, ``documents``, ``chunks``,
``symbol_queries``, ``caches``) and the index versions and counts below; ``rows`` maps rows to
records, ``records`` holds them.

SQLAlchemy 2.0 over SQLite in WAL mode (one writer, many readers). A chunk's integer primary
key is AUTOINCREMENT, so an id is never reused after a delete: it is the chunk's id in Faiss and
the key of its BM25 row for as long as the chunk lives (docs/contributing.md#one-row-id). Every
write that an ingest makes
happens in one transaction, so an ingest that fails half-way leaves the store as it was.

Rows are never updated in place: a write retires the documents it supersedes or deletes (their
``retired`` column names the store state, the *generation*, that retired them) and adds new rows,
so an index version keeps reading what it indexed until garbage collection drops the rows no kept
version can reach (``collect_garbage``). The methods that list the store read its current state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import func, or_, select

from hybrid_rag.store.caches import CacheRows
from hybrid_rag.store.chunks import ChunkRows
from hybrid_rag.store.documents import DocumentRows
from hybrid_rag.store.records import DocumentRecord, FileChunks, IndexVersionRecord
from hybrid_rag.store.rows import _INDEXED, _LIVE, _at
from hybrid_rag.store.schema import _Chunk, _Document, _Embedding, _IndexVersion
from hybrid_rag.store.sessions import check_data_dir
from hybrid_rag.store.symbol_queries import SymbolRows

__all__ = ["DocumentRecord", "FileChunks", "IndexVersionRecord", "MetadataStore", "check_data_dir"]


class MetadataStore(DocumentRows, ChunkRows, SymbolRows, CacheRows):
    """The metadata store: the SQLite file ``path``, or any database SQLAlchemy reaches by ``url``
    (``store.url``: a server database such as PostgreSQL when several processes or hosts share the
    store). Cheap to construct; the database opens on first use."""

    def record_index_version(
        self, name: str, version: int, source_hash: str, params: Mapping[str, Any], status: str
    ) -> None:
        with self._session() as s, s.begin():
            s.add(
                _IndexVersion(
                    name=name,
                    version=version,
                    built_at=datetime.now(timezone.utc),
                    source_hash=source_hash,
                    params=json.dumps(params, sort_keys=True, default=str),
                    status=status,
                    host=self.reader,
                )
            )

    def index_versions(self) -> list[IndexVersionRecord]:
        """This data dir's version history (on a shared store, not the other hosts' builds and
        rollbacks), with the rows from before schema 8."""
        mine = or_(_IndexVersion.host.is_(None), _IndexVersion.host == self.reader)
        with self._session() as s:
            query = select(_IndexVersion).where(mine).order_by(_IndexVersion.version, _IndexVersion.id)
            rows = s.scalars(query)
            return [
                IndexVersionRecord(
                    r.name, r.version, r.built_at, r.source_hash, json.loads(r.params), r.status
                )
                for r in rows
            ]

    def language_counts(self, *, state: int | None = None) -> dict[str, int]:
        """Natural language (ISO 639-1 code, or "und") -> number of live chunks (of store state
        ``state``: what a rolled-back version serves), most first."""
        with self._session() as s:
            docs = _LIVE if state is None else _at(state)
            query = select(_Chunk.lang, func.count(_Chunk.id)).join(_Document).where(docs)
            rows = s.execute(query.group_by(_Chunk.lang)).all()
        return dict(sorted(((lang or "und", int(n)) for lang, n in rows), key=lambda kv: (-kv[1], kv[0])))

    def document_languages(self, *, state: int | None = None) -> dict[int, dict[str, int]]:
        """Live document id (of store state ``state``: an old revision a rolled-back version
        serves) -> its chunks per language (documents without chunks left out)."""
        out: dict[int, dict[str, int]] = {}
        docs = _LIVE if state is None else _at(state)
        with self._session() as s:
            query = select(_Chunk.document_id, _Chunk.lang, func.count(_Chunk.id)).join(_Document)
            for doc, lang, n in s.execute(query.where(docs).group_by(_Chunk.document_id, _Chunk.lang)):
                out.setdefault(int(doc), {})[lang or "und"] = int(n)
        return out

    def counts(self, *, state: int | None = None) -> dict[str, int]:
        """Documents and chunks of the current state (documents: of store state ``state``)."""
        docs = _LIVE if state is None else _at(state)
        with self._session() as s:
            return {
                "documents": s.scalar(select(func.count(_Document.id)).where(docs)) or 0,
                "chunks": s.scalar(select(func.count(_Chunk.id)).join(_Document).where(_LIVE, _INDEXED)) or 0,
                "cached_embeddings": s.scalar(select(func.count()).select_from(_Embedding)) or 0,
            }
