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

POINTER = "CURRENT"
MANIFEST = "manifest.json"
INDEX_NAME = "dense+bm25"  # the name index builds are recorded under in the store
_VERSION_DIR = re.compile(r"^v(\d{6,})$")


class IndexVersions:
    """The version folders under one indices root. Cheap; touches the disk only when asked."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def directory(self, version: int) -> Path:
        return self.root / f"v{version:06d}"

    def current(self) -> int | None:
        """The live version, or None when nothing has been built."""
        try:
            text = (self.root / POINTER).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        if not text.isdigit():
            raise CorruptIndexError(
                f"index pointer {self.root / POINTER} is corrupt ({text[:20]!r}): run `hybrid-rag rebuild`"
            )
        return int(text)

    def require_current(self) -> int:
        version = self.current()
        if version is None:
            raise NoIndexError()
        return version

    def versions(self) -> list[int]:
        """Every complete version folder on disk, oldest first."""
        if not self.root.is_dir():
            return []
        found = (_VERSION_DIR.match(p.name) for p in self.root.iterdir() if p.is_dir())
        return sorted(int(m.group(1)) for m in found if m)

    def next_version(self) -> int:
        return max([0, *self.versions(), self.current() or 0]) + 1

    def staging(self, version: int) -> Path:
        """A fresh folder to build ``version`` in."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / f".staging-v{version:06d}-{os.getpid()}"
        if path.exists():
            shutil.rmtree(path)
        path.mkdir()
        return path

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
        tmp = self.root / f".{POINTER}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(f"{version}\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.root / POINTER)
        fsync_dir(self.root)

    def manifest(self, version: int) -> dict[str, Any]:
        path = self.directory(version) / MANIFEST
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
