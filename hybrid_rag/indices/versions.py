"""Versioned index folders and the pointer that names the live one.

Layout under ``data/indices/``::

    CURRENT            the live version number, replaced by an atomic rename
    v000001/           one complete build: dense.faiss, dense.json, bm25/, manifest.json
    v000002/
    .staging-v000003-<pid>/   a build in progress; renamed to v000003 only when complete

A reader follows ``CURRENT``; a build writes a staging folder, validates it, renames it into
place and only then swaps the pointer, so a crash at any moment leaves the old version live.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from hybrid_rag.errors import CorruptIndexError, NoIndexError
from hybrid_rag.indices.files import fsync_dir
from hybrid_rag.private_files import open_private, private_dir

POINTER = "CURRENT"
MANIFEST = "manifest.json"
INDEX_NAME = "dense+bm25"  # the name index builds are recorded under in the store
_VERSION_DIR = re.compile(r"^v(\d{6,})$")
MAX_VERSION = 2**31 - 1  # a pointer or folder past this is damage, not a version (SQLite INTEGER is 64-bit)
_RECOVER = (
    "run `hybrid-rag rebuild` (a new version from the store) or `hybrid-rag rollback N` to a version on disk"
)


def parse_pointer(raw: bytes) -> int:
    """The version number ``CURRENT`` holds: ASCII digits (and white space around them), 1 to
    ``MAX_VERSION``. Anything else (text, nothing, a sign, binary, a number too large) is a
    ValueError naming what it holds.

    >>> parse_pointer(b"12\\n")
    12
    """
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ValueError(f"holds {len(raw)} bytes that are not text") from None
    if not text:
        raise ValueError("is empty")
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"holds {text[:20]!r}, not a version number")
    version = int(text[:20]) if len(text) <= 20 else MAX_VERSION + 1
    if not 1 <= version <= MAX_VERSION:
        raise ValueError(f"holds {text[:20]!r}, not a version number (1 to {MAX_VERSION})")
    return version


class LiveVersion:
    """``require_current`` for a version store (folders on disk, or Milvus aliases) whose
    ``current()`` is the live version, None before the first build."""

    def current(self) -> int | None:
        raise NotImplementedError

    def require_current(self) -> int:
        """The live version; NoIndexError before the first build."""
        version = self.current()
        if version is None:
            raise NoIndexError()
        return version


class IndexVersions(LiveVersion):
    """The version folders under one indices root. Cheap; touches the disk only when asked."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def directory(self, version: int) -> Path:
        return self.root / f"v{version:06d}"

    def current(self) -> int | None:
        """The live version, or None when nothing has been built."""
        pointer = self.root / POINTER
        try:
            return parse_pointer(pointer.read_bytes())
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            problem = "is a folder, not a file"
        except ValueError as exc:
            problem = str(exc)
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        raise CorruptIndexError(f"the index pointer {pointer} {problem}: {_RECOVER}")

    def versions(self) -> list[int]:
        """Every complete version folder on disk, oldest first."""
        if not self.root.is_dir():
            return []
        found = (_VERSION_DIR.match(p.name) for p in self.root.iterdir() if p.is_dir())
        return sorted(v for v in (int(m.group(1)) for m in found if m) if v <= MAX_VERSION)

    def next_version(self) -> int:
        """One past the newest version folder: never read from ``CURRENT``, so a corrupt pointer
        cannot stop the rebuild that repairs it."""
        return max([0, *self.versions()]) + 1

    def staging(self, version: int) -> Path:
        """A fresh folder to build ``version`` in."""
        private_dir(self.root)  # indices/ and each version folder: 0700 under any umask
        path = self.root / f".staging-v{version:06d}-{os.getpid()}"
        if path.exists():
            shutil.rmtree(path)
        return private_dir(path)

    def publish(self, version: int, staging: Path) -> Path:
        """Move a complete staging folder into place, then point ``CURRENT`` at it."""
        target = self.directory(version)
        if target.exists():
            raise FileExistsError(f"index version {version} already exists at {target}")
        os.rename(staging, target)
        fsync_dir(self.root)
        self.set_current(version)
        return target

    def set_current(self, version: int) -> None:
        if not self.directory(version).is_dir():
            raise NoIndexError(f"index version {version} does not exist under {self.root}")
        pointer = self.root / POINTER
        if pointer.is_dir() and not pointer.is_symlink():  # a folder in its place: moved aside, not deleted
            os.rename(pointer, self.root / f".{POINTER}.folder.{os.getpid()}")
        tmp = self.root / f".{POINTER}.{os.getpid()}.tmp"
        with open_private(tmp) as fh:  # 0600: another user must not swap the live version
            fh.write(f"{version}\n".encode())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, pointer)
        fsync_dir(self.root)

    def manifest(self, version: int) -> dict[str, Any]:
        path = self.directory(version) / MANIFEST
        if not path.parent.is_dir():
            raise CorruptIndexError(f"index version {version} is not on disk under {self.root}: {_RECOVER}")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CorruptIndexError(f"index manifest {path} is missing: run `hybrid-rag rebuild`") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise CorruptIndexError(f"index manifest {path} is corrupt: run `hybrid-rag rebuild`") from None

    def prune(self, keep: int) -> list[int]:
        """Delete all but the newest ``keep`` versions (never the live one) and stale staging folders."""
        live = self.current()
        old = [v for v in self.versions()[: max(0, len(self.versions()) - keep)] if v != live]
        for version in old:
            shutil.rmtree(self.directory(version), ignore_errors=True)
        if self.root.is_dir():
            for path in self.root.glob(".staging-v*"):
                pid = path.name.rsplit("-", 1)[-1]
                if not pid.isdigit() or not pid_alive(int(pid)):
                    shutil.rmtree(path, ignore_errors=True)
        return old


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a lock or job left by a dead one is stale)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
