"""Opening the store: the SQLite file's checks, WAL and pragmas, the data dir check, the sessions."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from hybrid_rag.deadline import PROGRESS_STEPS, past_deadline
from hybrid_rag.errors import StoreError, disk_full, is_disk_full, no_space_left
from hybrid_rag.filters.globs import SQL_FUNCTION, sql_glob
from hybrid_rag.private_files import private_dir
from hybrid_rag.store.migrate import ensure_schema
from hybrid_rag.store.readers import reader_name

_DAMAGED = ("malformed", "file is not a database", "database disk image")  # SQLite on a damaged file


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


class StoreSessions:
    """Opening the store (once, across threads), its file checks and its sessions: the base of
    every group of the store's methods."""

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
