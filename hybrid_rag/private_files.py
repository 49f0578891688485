"""Files under the data dir are private to its owner: folders 0700, files 0600, as the store, the
index files, the query log and the jobs already are. Logs hold query and filter text; uploads are
the documents themselves."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO, TextIO

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path, *, tighten: bool = True) -> Path:
    """``path`` made, each missing parent too, readable by its owner only (0700; ``mkdir``'s mode
    is only ever narrowed by the umask, so umask 000 makes them 0700 too). ``tighten`` also makes an
    existing ``path`` 0700 (the data dir's own folders); without it a folder that exists is left as
    it is (the folder of a store file or keys file configured outside the data dir)."""
    path = Path(path)
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            folder.mkdir(mode=DIR_MODE)
    if tighten or path in missing:
        with contextlib.suppress(OSError):  # a folder someone else owns: left as it is
            os.chmod(path, DIR_MODE)
    return path


def append_private(path: Path) -> TextIO:
    """``path`` opened to append text, created 0600 (and made 0600 if it was not) in a private folder."""
    private_dir(Path(path).parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    with contextlib.suppress(OSError):
        os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, "a", encoding="utf-8")


def open_private(path: Path) -> BinaryIO:
    """``path`` opened to write bytes, created (or truncated) 0600 whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with contextlib.suppress(OSError):
        os.fchmod(fd, FILE_MODE)  # a file that existed keeps its mode through O_CREAT
    return os.fdopen(fd, "wb")


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file ``path``, 0600 from the start."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
