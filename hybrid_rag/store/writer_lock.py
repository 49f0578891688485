"""One writer at a time on a data dir, across processes (the CLI, the server, ``watch``).

Every command that writes the store or publishes an index version (ingest, import, delete,
rebuild, rollback, and the garbage collection that follows a build) holds the lock file
``<data dir>/.writer.lock`` (``fcntl.flock``: the kernel drops it when the holder dies, kill -9
included, so a crashed writer never leaves it stuck). A second writer waits up to
``store.writer_wait_seconds`` and then fails with "another write is running (pid N, since T)";
threads of one process (server jobs) queue on the same lock, and a holder may take it again
(an ingest's build). The holder's pid, start time and command are written into the file for
that message. With the store on PostgreSQL the lock still lives in the data dir: processes that
share a data dir (its index versions) serialise the same way as on SQLite.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from hybrid_rag.errors import WriterBusyError
from hybrid_rag.private_files import private_dir
from hybrid_rag.store.store import check_data_dir

LOCK_FILE = ".writer.lock"
_POLL_SECONDS = 0.05


@dataclass
class _Holding:
    """This process's hold on one lock file: the thread lock, the open file, how deep."""

    thread_lock: threading.RLock = field(default_factory=threading.RLock)
    fd: int | None = None
    depth: int = 0


_held: dict[str, _Holding] = {}
_registry = threading.Lock()


class WriterLock:
    """The writer lock of one data dir. Cheap to construct; ``hold()`` takes it."""

    def __init__(self, data_dir: Path, wait_seconds: float) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self.wait_seconds = wait_seconds

    @contextmanager
    def hold(self, command: str) -> Iterator[None]:
        """Hold the lock for ``command`` (named in the message a waiting writer gets)."""
        with _registry:
            holding = _held.setdefault(str(self.path), _Holding())
        deadline = time.monotonic() + self.wait_seconds
        if not holding.thread_lock.acquire(timeout=max(self.wait_seconds, 0.0)):
            raise WriterBusyError(self._busy())
        try:
            if holding.depth == 0:
                holding.fd = self._take(deadline, command)
            holding.depth += 1
            try:
                yield
            finally:
                holding.depth -= 1
                if holding.depth == 0 and holding.fd is not None:
                    fcntl.flock(holding.fd, fcntl.LOCK_UN)
                    os.close(holding.fd)
                    holding.fd = None
        finally:
            holding.thread_lock.release()

    def _take(self, deadline: float, command: str) -> int:
        check_data_dir(self.path.parent, write=True)  # a file there, or not writable: one clear line
        private_dir(self.path.parent, tighten=False)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise WriterBusyError(self._busy()) from None
                time.sleep(_POLL_SECONDS)
        since = datetime.now(timezone.utc).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {since} {command}\n".encode(), 0)
        return fd

    def _busy(self) -> str:
        try:
            pid, since, command = self.path.read_text(encoding="utf-8").split(maxsplit=2)
            who = f"{command.strip()} by pid {pid}, since {since}"
        except (OSError, ValueError):
            who = "holder unknown"
        return (
            f"another write is running on {self.path.parent} ({who}); waited "
            f"{self.wait_seconds:g} s (store.writer_wait_seconds): try again when it is done"
        )
