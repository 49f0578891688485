"""MetadataStore: documents, chunks, cached embeddings and index versions in SQLite.

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

import contextlib
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import (
    Integer,
    String,
    and_,
    cast,
    create_engine,
    delete,
    event,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.elements import ColumnElement

from hybrid_rag.deadline import PROGRESS_STEPS, past_deadline
from hybrid_rag.errors import StoreError, disk_full, is_disk_full, no_space_left
from hybrid_rag.filters import FilterExpr
from hybrid_rag.filters.cost import cost_of
from hybrid_rag.filters.globs import SQL_FUNCTION, sql_glob
from hybrid_rag.lang.detect import detect_chunk_language
from hybrid_rag.private_files import private_dir
from hybrid_rag.store import reference_rows, symbol_rows
from hybrid_rag.store.filter_sql import to_sql
from hybrid_rag.store.migrate import ensure_schema
from hybrid_rag.store.readers import reader_name
from hybrid_rag.store.schema import (
    CHUNKS,
    DOCUMENTS,
    GENERATION,
    REFERENCES_PENDING,
    SYMBOLS_PENDING,
    _Chunk,
    _Document,
    _Embedding,
    _IndexVersion,
    _Meta,
    _Reference,
    _Signature,
    _Symbol,
    _Tokens,
)
from hybrid_rag.store.statement_timeout import bound_to_deadline
from hybrid_rag.symbols.model import Reference, ReferenceSpan, Symbol, SymbolSpan
from hybrid_rag.types import Chunk, ChunkSpan, LoadedFile, SourceType
from hybrid_rag.vectors import bad_rows

_IN_BATCH = 900  # SQLite's default limit on bound parameters is 999
_DAMAGED = ("malformed", "file is not a database", "database disk image")  # SQLite on a damaged file
READER = "reader:"  # meta keys of the data dirs reading a shared store: reader:<host>:<indices dir>


@dataclass(frozen=True)
class DocumentRecord:
    id: int
    path: str
    collection: str
    sha256: str
    size: int
    mtime: float
    source_type: SourceType
    language: str
    ingested_at: datetime
    meta: Mapping[str, Any] = field(default_factory=dict)
    languages: Mapping[str, int] = field(default_factory=dict)  # its chunks per natural language


@dataclass(frozen=True)
class IndexVersionRecord:
    name: str
    version: int
    built_at: datetime
    source_hash: str
    params: Mapping[str, Any]
    status: str


@dataclass(frozen=True)
class FileChunks:
    """One file to (re)write in the store, with the chunks the chunker cut from it and the
    definitions and the references found in it (``hybrid_rag/symbols``)."""

    file: LoadedFile
    spans: Sequence[ChunkSpan]
    # span index -> sha256 of the kept chunk it nearly repeats: stored, never embedded nor indexed
    duplicate_of: Mapping[int, str] = field(default_factory=dict)
    symbols: Sequence[SymbolSpan] = ()
    references: Sequence[ReferenceSpan] = ()

    @property
    def kept(self) -> list[ChunkSpan]:
        """The spans that are indexed (all but the near-duplicates)."""
        return [sp for i, sp in enumerate(self.spans) if i not in self.duplicate_of]


_BUSY_SECONDS = 30.0


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """Journal mode WAL. Switching a new file takes its exclusive lock, and SQLite answers "database
    is locked" at once, without its busy handler, while another connection is switching the same
    file (several first openers racing): so wait here, as the busy timeout would elsewhere."""
    deadline = time.monotonic() + _BUSY_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={int(_BUSY_SECONDS * 1000)}")
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
    dbapi_connection.create_function(SQL_FUNCTION, 2, sql_glob, deterministic=True)
    dbapi_connection.set_progress_handler(past_deadline, PROGRESS_STEPS)


def live_index_of(indices: Path) -> str | None:
    """The index version live under ``indices`` ("index v3"), by its pointer file; None when
    nothing was ever published there."""
    pointer = Path(indices) / "CURRENT"
    try:
        text = pointer.read_bytes().decode("ascii").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError):
        return f"an index ({pointer})"
    return f"index v{int(text)}" if text.isdigit() and len(text) < 12 else f"an index ({pointer})"


def _make_private(path: Path) -> None:
    """The store's files readable by their owner only (0600), as the index files and the query log."""
    for name in (path.name, path.name + "-wal", path.name + "-shm"):
        with contextlib.suppress(OSError):
            os.chmod(path.with_name(name), 0o600)


def check_data_dir(path: Path, *, write: bool) -> None:
    """StoreError unless ``path`` is a folder, or (``write``) one that can be made, and is writable.

    Checked once at start (the CLI) and before the store opens, so a data dir that is a file or
    sits under one is one clear line, not a traceback from the first ``mkdir``."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise StoreError(
            f"the data dir {path} is not a folder: set --data-dir or HYBRID_RAG_HOME to a folder"
        )
    if not write:
        return
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise StoreError(f"the data dir {path} cannot be made: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == path else f"cannot be made: {existing} is not writable"
        raise StoreError(f"the data dir {path} {what}")


class MetadataStore:
    """The metadata store: the SQLite file ``path``, or any database SQLAlchemy reaches by ``url``
    (``store.url``: a server database such as PostgreSQL when several processes or hosts share the
    store). Cheap to construct; the database opens on first use."""

    def __init__(self, path: Path, *, url: str | None = None, indices: Path | None = None) -> None:
        self.path = Path(path)
        self.url = url or f"sqlite:///{self.path}"
        self._file = url is None  # the SQLite file in the data dir
        self.indices = indices  # the index folder built from this store: while it has a live version,
        # a missing or empty store file is an error (it vanished), never a new empty store
        self.reader = None if indices is None else reader_name(indices)  # its rows of the history
        self._inode: int | None = None  # the file opened, to notice one deleted or replaced under us
        self._engine: Engine | None = None
        self._sessions: sessionmaker[Session] | None = None
        self._opening = threading.Lock()  # threads (a server's requests) share one store

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        """Whether the store has been created (a database behind a URL is taken to exist).
        StoreError when the file is missing while an index built from it is live."""
        if not self._file:
            return True
        if not self.path.exists():
            self._refuse_new_store("missing")
            return False
        return True

    def _refuse_new_store(self, problem: str) -> None:
        """StoreError when the store file is ``problem`` ("missing", "empty") while an index built
        from it is live: a first ingest creates a store, nothing else does."""
        live = live_index_of(self.indices) if self.indices is not None else None
        if live is not None:
            raise StoreError(
                f"the store {self.path} is {problem} but {live} is live: restore the store file, "
                f"or remove {self.indices} to start over"
            )

    def _check_file(self) -> None:
        """Before each session: a store file deleted or emptied under a live index is an error; one
        replaced (restored) is reopened."""
        try:
            stat = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            stat = None
        if stat is None or stat.st_size == 0:
            self._refuse_new_store("missing" if stat is None else "empty")
        if self._sessions is not None and (stat is None or stat.st_ino != self._inode):
            self.close()

    @property
    def where(self) -> str:
        """The store's file, or its URL without the password (for messages)."""
        return str(self.path) if self._file else make_url(self.url).render_as_string(hide_password=True)

    def _open(self) -> sessionmaker[Session]:
        if self._file:
            self._check_file()
        sessions = self._sessions
        if sessions is not None:
            return sessions
        with self._opening:  # one thread creates the schema; the others wait and share its engine
            return self._sessions if self._sessions is not None else self._open_once()

    def _open_once(self) -> sessionmaker[Session]:
        if self._file:
            check_data_dir(self.path.parent, write=True)
            try:
                private_dir(self.path.parent, tighten=False)  # a new data dir: 0700 under any umask
            except OSError as exc:
                where = self.path.parent
                raise StoreError(f"cannot make the data dir {where}: {exc.strerror or exc}") from None
        try:
            sqlite = make_url(self.url).get_backend_name() == "sqlite"
            engine = create_engine(self.url, connect_args={"check_same_thread": False} if sqlite else {})
        except (ArgumentError, ImportError) as exc:  # a malformed URL, or its driver is not installed
            raise StoreError(f"cannot open the store at {self.where}: {exc}") from None
        if sqlite:
            event.listen(engine, "connect", _on_connect)
        try:
            self._check_schema(engine)
        except (DatabaseError, OperationalError) as exc:
            engine.dispose()
            if self._file and (is_disk_full(exc) or no_space_left(self.path.parent)):
                kept = f"the store {self.where} is unchanged (SQLite needs room for its -wal and -shm files)"
                raise disk_full(self.path.parent, kept) from None
            raise self._damaged(exc) or StoreError(
                f"cannot open the store at {self.where}: {exc.orig}"
            ) from None
        except StoreError:
            engine.dispose()
            raise
        if self._file:
            _make_private(self.path)
        self._engine = engine
        self._inode = os.stat(self.path).st_ino if self._file else None
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        return self._sessions

    def _damaged(self, exc: DatabaseError) -> StoreError | None:
        """A StoreError naming the way back when the store file is damaged (truncated, overwritten)."""
        reason = str(getattr(exc, "orig", exc))
        if not self._file or not any(m in reason for m in _DAMAGED):
            return None
        home = self.path.parent
        return StoreError(
            f"the store {self.path} is damaged ({reason}): restore it from a backup, or rebuild the "
            f"store from the files: move {home} aside and run `hybrid-rag --data-dir {home} ingest PATH` "
            "for each folder it held (every chunk is embedded again)"
        )

    def _check_schema(self, engine: Engine) -> None:
        ensure_schema(engine, self.where, on_empty=self._refuse_new_store if self._file else None)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
        self._engine = None
        self._sessions = None

    @contextmanager
    def _session(self) -> Iterator[Session]:
        try:
            with self._open()() as session:
                yield session
        except DatabaseError as exc:  # OperationalError included
            damaged = self._damaged(exc)
            if damaged is not None:
                raise damaged from None
            if not is_disk_full(exc):
                raise
            where = self.path.parent if self._file else Path(".")
            kept = f"the write was rolled back, the store {self.where} keeps its last commit"
            raise disk_full(where, kept) from None

    # -- documents ---------------------------------------------------------------------------

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
                        start_line=sp.start_line,
                        end_line=sp.end_line,
                        text=sp.text,
                        token_count=sp.token_count,
                        sha256=sp.sha256,
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

    # -- dropped near-duplicates -------------------------------------------------------------

    def iter_dedupe_rows(self, batch_size: int = 2000) -> Iterator[tuple[str, str, str, str, str]]:
        """(sha256, text, path, collection, document meta JSON or "") of every indexed chunk of the
        current state, in id order: what a near-duplicate check compares new chunks with."""
        last = 0
        while True:
            with self._session() as s:
                query = (
                    select(
                        _Chunk.id,
                        _Chunk.sha256,
                        _Chunk.text,
                        _Document.path,
                        _Document.collection,
                        _Document.meta,
                    )
                    .join(_Document)
                    .where(_Chunk.id > last, _LIVE, _INDEXED)
                    .order_by(_Chunk.id)
                    .limit(batch_size)
                )
                rows = s.execute(query).all()
            if not rows:
                return
            for _id, sha, text, path, collection, meta in rows:
                yield sha, text, path, collection, meta or ""
            last = rows[-1][0]

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

    # -- readers of a shared store ------------------------------------------------------------

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

    # -- store states ----------------------------------------------------------------------

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

    # -- chunks ----------------------------------------------------------------------------

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
            for batch in _batches([int(i) for i in ids]):
                query = select(_Chunk, _Document).join(_Document).where(_Chunk.id.in_(batch))
                for chunk, doc in s.execute(query):
                    out[chunk.id] = _chunk(chunk, doc)
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
        last = 0
        while True:
            with self._session() as s:
                query = (
                    select(_Chunk, _Document)
                    .join(_Document)
                    .where(_Chunk.id > last, _LIVE, _INDEXED)
                    .order_by(_Chunk.id)
                    .limit(batch_size)
                )
                rows = s.execute(query).all()
            if not rows:
                return
            for chunk, doc in rows:
                yield _chunk(chunk, doc)
            last = rows[-1][0].id

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

    # -- symbols ---------------------------------------------------------------------------

    def symbols(
        self,
        *,
        state: int | None = None,
        names: Iterable[str] | None = None,
        prefix: str | None = None,
        path_glob: str | None = None,
        path: str | None = None,
        kinds: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Symbol]:
        """Definitions seen at store state ``state`` (None: the current one), in (path, position)
        order: those whose name is one of ``names`` or starts with ``prefix`` (case-insensitive),
        of a stored ``path`` or a ``path_glob``, of ``kinds`` (``store/symbol_rows.py``)."""
        with self._session() as s:
            return symbol_rows.read(
                s,
                state=state,
                names_lower=None if names is None else [n.lower() for n in names],
                prefix_lower=None if prefix is None else prefix.lower(),
                path_glob=path_glob,
                path=path,
                kinds=kinds,
                limit=limit,
            )

    def symbol_names(
        self, *, state: int | None = None, path_glob: str | None = None, kinds: Sequence[str] | None = None
    ) -> list[str]:
        """The distinct definition names seen at ``state`` (for fuzzy lookups)."""
        with self._session() as s:
            return symbol_rows.names(s, state=state, path_glob=path_glob, kinds=kinds)

    def symbols_pending(self) -> bool:
        """Whether the store was migrated from before symbols (or before references) and no ingest
        has recorded them yet."""
        with self._session() as s:
            keys = (SYMBOLS_PENDING, REFERENCES_PENDING)
            return s.scalar(select(_Meta.value).where(_Meta.key.in_(keys))) is not None

    def symbols_recorded(self) -> None:
        """Forget ``symbols_pending`` (an ingest rewrote the code files it found)."""
        with self._session() as s, s.begin():
            s.execute(delete(_Meta).where(_Meta.key.in_((SYMBOLS_PENDING, REFERENCES_PENDING))))

    def references(
        self,
        *,
        state: int | None = None,
        names: Iterable[str] | None = None,
        document_ids: Iterable[int] | None = None,
        kinds: Sequence[str] | None = None,
        lines: tuple[int, int] | None = None,
    ) -> list[Reference]:
        """Uses of names seen at store state ``state``, by exact name or document, of ``kinds``,
        within ``lines`` (``store/reference_rows.py``)."""
        with self._session() as s:
            return reference_rows.read(
                s, state=state, names=names, document_ids=document_ids, kinds=kinds, lines=lines
            )

    def symbols_of(
        self,
        document_ids: Iterable[int],
        *,
        positions: Iterable[int] | None = None,
        qualified_names: Iterable[str] | None = None,
    ) -> list[Symbol]:
        """The definitions of these document revisions (all, or those at ``positions`` or with
        ``qualified_names``), in file order."""
        with self._session() as s:
            return reference_rows.symbols_of(
                s, document_ids, positions=positions, qualified_names=qualified_names
            )

    def reference_count(self) -> int:
        """References in the current state."""
        with self._session() as s:
            return s.scalar(select(func.count(_Reference.id)).join(_Document).where(_LIVE)) or 0

    def symbol_count(self) -> int:
        """Definitions in the current state."""
        with self._session() as s:
            query = select(func.count(_Symbol.id)).join(_Document).where(_LIVE)
            return s.scalar(query) or 0

    # -- embedding cache -------------------------------------------------------------------

    def cached_windows(
        self, model: str, sha256s: Iterable[str], *, corrupt: list[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Cached window vectors by chunk sha256, each of shape (n_windows, dimension). A row that
        fails its checksum (or, without one, has rows that are not unit length) is left out, as if
        not cached, and its sha256 appended to ``corrupt``."""
        out: dict[str, np.ndarray] = {}
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Embedding).where(_Embedding.model == model, _Embedding.sha256.in_(batch))
                for row in s.scalars(query):
                    windows = _checked_windows(row)
                    if windows is None:
                        if corrupt is not None:
                            corrupt.append(row.sha256)
                        continue
                    out[row.sha256] = windows
        return out

    def drop_embeddings(self, model: str, sha256s: Iterable[str]) -> None:
        """Forget cached vectors (corrupt ones, before they are embedded again)."""
        with self._session() as s, s.begin():
            for batch in _batches(sorted(set(sha256s))):
                s.execute(delete(_Embedding).where(_Embedding.model == model, _Embedding.sha256.in_(batch)))

    def cached_shas(self, model: str, sha256s: Iterable[str]) -> set[str]:
        """Which of the chunk sha256s have cached vectors for ``model`` (the vectors are not read)."""
        out: set[str] = set()
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Embedding.sha256).where(
                    _Embedding.model == model, _Embedding.sha256.in_(batch)
                )
                out.update(s.scalars(query))
        return out

    def put_embeddings(self, model: str, embeddings: Mapping[str, np.ndarray]) -> None:
        """Cache vectors by chunk sha256: a (dimension,) vector or a (n_windows, dimension) matrix."""
        with self._session() as s, s.begin():
            self._put_embeddings(s, model, embeddings)

    @staticmethod
    def _put_embeddings(s: Session, model: str, embeddings: Mapping[str, np.ndarray]) -> None:
        known = set()
        for batch in _batches(list(embeddings)):
            query = select(_Embedding.sha256).where(_Embedding.model == model, _Embedding.sha256.in_(batch))
            known.update(s.scalars(query))
        rows = []
        for sha, vec in embeddings.items():
            if sha in known:
                continue
            blob = np.ascontiguousarray(np.atleast_2d(vec), dtype=np.float32).tobytes()
            rows.append(
                _Embedding(
                    model=model,
                    sha256=sha,
                    dimension=int(np.shape(vec)[-1]),
                    vector=blob,
                    checksum=zlib.crc32(blob),
                )
            )
        s.add_all(rows)

    # -- near-duplicate signatures ---------------------------------------------------------

    def cached_signatures(self, num_perm: int, sha256s: Iterable[str]) -> dict[str, np.ndarray | None]:
        """MinHash hash values by chunk sha256 (None for a text without words)."""
        out: dict[str, np.ndarray | None] = {}
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Signature).where(
                    _Signature.num_perm == num_perm, _Signature.sha256.in_(batch)
                )
                for row in s.scalars(query):
                    values = row.hashvalues
                    out[row.sha256] = (
                        None if values is None else np.frombuffer(values, dtype=np.uint64).copy()
                    )
        return out

    def put_signatures(self, num_perm: int, signatures: Mapping[str, np.ndarray | None]) -> None:
        with self._session() as s, s.begin():
            known = set()
            for batch in _batches(list(signatures)):
                known.update(s.scalars(select(_Signature.sha256).where(_Signature.sha256.in_(batch))))
            s.add_all(
                _Signature(
                    sha256=sha,
                    num_perm=num_perm,
                    hashvalues=None if values is None else np.asarray(values, dtype=np.uint64).tobytes(),
                )
                for sha, values in signatures.items()
                if sha not in known
            )

    # -- BM25 token cache ------------------------------------------------------------------

    def cached_tokens(self, tokenizer: str, sha256s: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Tokens).where(_Tokens.tokenizer == tokenizer, _Tokens.sha256.in_(batch))
                out.update((row.sha256, row.terms.split()) for row in s.scalars(query))
        return out

    def put_tokens(self, tokenizer: str, tokens: Mapping[str, Sequence[str]]) -> None:
        with self._session() as s, s.begin():
            known = set()
            for batch in _batches(list(tokens)):
                query = select(_Tokens.sha256).where(
                    _Tokens.tokenizer == tokenizer, _Tokens.sha256.in_(batch)
                )
                known.update(s.scalars(query))
            s.add_all(
                _Tokens(sha256=sha, tokenizer=tokenizer, terms=" ".join(terms))
                for sha, terms in tokens.items()
                if sha not in known
            )

    # -- index versions --------------------------------------------------------------------

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

    # -- stats -----------------------------------------------------------------------------

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


def _chunk(c: _Chunk, d: _Document) -> Chunk:
    return Chunk(
        id=c.id,
        document_id=c.document_id,
        path=d.path,
        position=c.position,
        start_line=c.start_line,
        end_line=c.end_line,
        text=c.text,
        token_count=c.token_count,
        sha256=c.sha256,
        source_type=SourceType(d.source_type),
        language=d.language,
        collection=d.collection,
        meta={**_meta(d.meta), **_meta(c.meta)},
        lang=c.lang or "und",
    )


def _json_or_none(meta: Mapping[str, Any]) -> str | None:
    return json.dumps(dict(meta), sort_keys=True, ensure_ascii=False, default=str) if meta else None


def _meta(raw: str | None) -> dict[str, Any]:
    return json.loads(raw) if raw else {}
