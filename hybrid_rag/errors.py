"""User-facing errors: each carries one clear line that the CLI prints without a traceback."""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path


class HybridRagError(Exception):
    """Base class for every error a user can cause and fix (bad input, missing index, ...)."""


class ConfigError(HybridRagError):
    """A configuration file or override is malformed; the message names the key."""


class InputError(HybridRagError):
    """A path, file, archive or query the engine cannot take."""


class NoIndexError(HybridRagError):
    """Nothing has been ingested (or indexed) yet."""

    def __init__(self, message: str = "no index yet: run `hybrid-rag ingest PATH`") -> None:
        super().__init__(message)


class IndexMismatchError(HybridRagError):
    """An index on disk was built with another model, dimension or parameters."""


class CorruptIndexError(HybridRagError):
    """An index file is missing, truncated or fails its checksum."""


class StoreError(HybridRagError):
    """The metadata store is unreadable or written by an incompatible schema."""


class DiskFullError(StoreError):
    """A write found no space left on the disk; it was rolled back, so nothing committed is lost."""


class ModelError(HybridRagError):
    """A model could not be loaded (not cached, not installed, wrong path)."""


class RemoteServiceError(HybridRagError):
    """A generator or reranker server did not answer, or answered badly."""


def describe(exc: BaseException) -> str:
    """One line for a note: ``Type: first line of the message`` (at most 200 characters), or the
    type alone when there is no message."""
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text.splitlines()[0][:200]}" if text else name


_FULL_MESSAGES = re.compile(
    "|".join(re.escape(f"({os.strerror(code)})") for code in (errno.ENOSPC, errno.EDQUOT))
)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) is a full disk: ENOSPC / EDQUOT from the OS, or SQLite's
    SQLITE_FULL ("database or disk is full")."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chain of causes is short; never follow a cycle
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "database or disk is full" in str(seen):
            return True
        if isinstance(seen, RuntimeError) and _FULL_MESSAGES.search(str(seen)):  # a C++ library's
            return True  # write error (faiss::write_index: "... (No space left on device)")
        orig = getattr(seen, "orig", None)  # SQLAlchemy wraps the driver's error
        seen = orig if isinstance(orig, BaseException) else seen.__cause__ or seen.__context__
    return False


def no_space_left(path: Path, below: int = 2**16) -> bool:
    """Whether the disk holding ``path`` has less than ``below`` bytes free (an error there, such
    as SQLite's "disk I/O error" on open, is then the full disk's)."""
    try:
        return shutil.disk_usage(path).free < below
    except OSError:
        return False


def disk_full(where: Path, kept: str) -> DiskFullError:
    """The one line for a full disk: the folder written to, its mount point and free space, what
    was kept. ``kept`` says what the user still has (e.g. "the store keeps its last commit")."""
    where = Path(where)
    existing = where
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    mount = existing.resolve()
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        free = f"{shutil.disk_usage(existing).free / 2**20:.1f} MiB free"
    except OSError:
        free = "free space unknown"
    return DiskFullError(
        f"no space left on the disk mounted at {mount} ({free}) writing {where}: {kept}; "
        "free space and run the command again"
    )


class WriterBusyError(StoreError):
    """Another process (or thread) holds the data dir's writer lock (``store/writer_lock.py``)."""
