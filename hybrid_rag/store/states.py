"""The store's states (generations): the readers' holds and garbage collection."""

from __future__ import annotations

from sqlalchemy import Integer, String, cast, delete, func, select, update
from sqlalchemy.orm import Session

from hybrid_rag.store.rows import _LIVE, _batches, _generation
from hybrid_rag.store.schema import (
    GENERATION,
    _Chunk,
    _Document,
    _Embedding,
    _Meta,
    _Reference,
    _Signature,
    _Symbol,
    _Tokens,
)
from hybrid_rag.store.sessions import StoreSessions

READER = "reader:"  # meta keys of the data dirs reading a shared store: reader:<host>:<indices dir>


class StoreStates(StoreSessions):
    """The store's states (generations): which states the readers hold, and the garbage
    collection of the rows no kept state reaches."""

    @property
    def shared(self) -> bool:
        """Whether the store is a server database that other data dirs (hosts) may share."""
        return not self._file

    def hold_state(self, reader: str, state: int) -> None:
        """Record that data dir ``reader`` keeps index versions built from store state ``state`` on:
        garbage collection (of any data dir sharing the store) keeps what they read."""
        key = READER + reader
        with self._session() as s, s.begin():
            row = s.get(_Meta, key)
            if row is None:
                s.add(_Meta(key=key, value=str(state)))
            else:
                row.value = str(state)

    def held_states(self) -> dict[str, int]:
        """reader -> the oldest store state its kept versions read (``hold_state``)."""
        with self._session() as s:
            rows = s.execute(select(_Meta.key, _Meta.value).where(_Meta.key.startswith(READER)))
            return {k[len(READER) :]: int(v) for k, v in rows if v.lstrip("-").isdigit()}

    def generation(self) -> int:
        """The store's state: 0 when new, one more after every ``write_files``. An index version
        records the state it was built from (its manifest's ``store_state``)."""
        with self._session() as s:
            return _generation(s)

    @staticmethod
    def _advance(s: Session) -> int:
        """The next store state, counted up first thing in the caller's transaction: the update
        takes the row lock (PostgreSQL) or the write lock (SQLite), so two writers get two states."""
        bumped = cast(cast(_Meta.value, Integer) + 1, String)
        s.execute(update(_Meta).where(_Meta.key == GENERATION).values(value=bumped))
        return _generation(s)

    def collect_garbage(self, oldest_state: int) -> dict[str, int]:
        """Delete the documents (their chunks cascade) retired at or before store state
        ``oldest_state`` (no kept index version was built before it, so none reads them), and the
        cached vectors, signatures and BM25 terms of their texts that no other chunk holds. One
        transaction: a kill leaves all of it or none. Returns counts of what went."""
        with self._session() as s, s.begin():
            old = select(_Document.id).where(_Document.retired <= oldest_state)
            docs = list(s.scalars(old))
            if not docs:
                return {"documents": 0, "chunks": 0, "cached_embeddings": 0}
            shas: set[str] = set()
            chunks = 0
            for batch in _batches(docs):
                found = list(s.scalars(select(_Chunk.sha256).where(_Chunk.document_id.in_(batch))))
                chunks += len(found)
                shas.update(found)
                s.execute(delete(_Symbol).where(_Symbol.document_id.in_(batch)))
                s.execute(delete(_Reference).where(_Reference.document_id.in_(batch)))
                s.execute(delete(_Chunk).where(_Chunk.document_id.in_(batch)))
                s.execute(delete(_Document).where(_Document.id.in_(batch)))
            held = set()
            for batch in _batches(sorted(shas)):
                held.update(s.scalars(select(_Chunk.sha256).where(_Chunk.sha256.in_(batch)).distinct()))
            orphans = sorted(shas - held)
            vectors = 0
            for batch in _batches(orphans):
                vectors += s.execute(delete(_Embedding).where(_Embedding.sha256.in_(batch))).rowcount or 0
                s.execute(delete(_Signature).where(_Signature.sha256.in_(batch)))
                s.execute(delete(_Tokens).where(_Tokens.sha256.in_(batch)))
            return {"documents": len(docs), "chunks": chunks, "cached_embeddings": vectors}

    def old_revisions(self) -> dict[str, int]:
        """What the retired rows (old revisions kept for older index versions) hold: documents,
        chunks, bytes of chunk text, and cached vectors (and their bytes) no current chunk shares."""
        with self._session() as s:
            retired = _Document.retired.is_not(None)
            row = s.execute(
                select(func.count(_Chunk.id), func.coalesce(func.sum(func.length(_Chunk.text)), 0))
                .join(_Document)
                .where(retired)
            ).one()
            live_shas = select(_Chunk.sha256).join(_Document).where(_LIVE)
            old_shas = select(_Chunk.sha256).join(_Document).where(retired)
            vectors = s.execute(
                select(func.count(), func.coalesce(func.sum(func.length(_Embedding.vector)), 0)).where(
                    _Embedding.sha256.in_(old_shas), _Embedding.sha256.not_in(live_shas)
                )
            ).one()
            return {
                "documents": s.scalar(select(func.count(_Document.id)).where(retired)) or 0,
                "chunks": int(row[0]),
                "text_bytes": int(row[1]),
                "cached_embeddings": int(vectors[0]),
                "embedding_bytes": int(vectors[1]),
            }
