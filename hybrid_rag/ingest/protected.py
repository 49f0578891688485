"""What an ingest never reads: hybrid-rag's own files, wherever they are configured, and any
other data dir it meets.

The data dir is excluded by the walk itself (``loaders.iter_files``); this module adds what lies
outside it or beside it: the indices folder, the store file and the logs folder when
``paths.*`` puts them elsewhere, the API keys file (``server.api_keys_file``), any folder that
looks like another hybrid-rag data dir (``indices/CURRENT`` beside a store file, an ``api_keys``
file, ``jobs/`` or ``logs/queries.jsonl``: a project's default ``./data`` while the server uses
``--data-dir`` elsewhere), any file named ``api_keys``, and any file that is a hard link to a
protected one (same device and inode), since a hard link has no path to recognise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_rag.settings import Settings

KEYS_FILE_NAME = "api_keys"  # the keys file's default name in a data dir (server/auth.py)
STORE_FILE_NAME = "store.sqlite3"
POINTER = ("indices", "CURRENT")
_BESIDE_POINTER = (STORE_FILE_NAME, KEYS_FILE_NAME, "jobs", "logs/queries.jsonl")


def looks_like_data_dir(folder: Path) -> bool:
    """Whether ``folder`` holds hybrid-rag's files: ``indices/CURRENT`` with a store file, a keys
    file, ``jobs/`` or a query log beside it, or an ``api_keys`` file beside a store file."""
    try:
        pointer = folder.joinpath(*POINTER).is_file()
        if pointer:
            return any((folder / name).exists() for name in _BESIDE_POINTER)
        return (folder / KEYS_FILE_NAME).is_file() and (folder / STORE_FILE_NAME).is_file()
    except OSError:
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


@dataclass(frozen=True)
class Protected:
    """Folders and files an ingest skips wherever they are, by path and by (device, inode)."""

    folders: frozenset[Path] = frozenset()  # resolved
    files: frozenset[Path] = frozenset()  # resolved
    inodes: dict[tuple[int, int], str] = field(default_factory=dict)  # -> what it is, for the reason

    @classmethod
    def of(cls, folders: Iterable[Path], files: Iterable[Path]) -> Protected:
        """The protected ``folders`` (the data dir, indices, logs) and ``files`` (store, keys); the
        identity of each file that exists now, and of the files directly in the folders' top level
        that matter most (``CURRENT``, the query log, the error log)."""
        folders = frozenset(Path(f).expanduser().resolve() for f in folders)
        files = frozenset(Path(f).expanduser().resolve() for f in files)
        inodes: dict[tuple[int, int], str] = {}
        watched = [*files, *(f.with_name(f.name + "-wal") for f in files)]
        for folder in folders:
            watched += [folder / KEYS_FILE_NAME, folder / STORE_FILE_NAME, folder.joinpath(*POINTER)]
            watched += [folder / "CURRENT", folder / "queries.jsonl", folder / "errors.log"]
            watched += [folder / "logs" / "queries.jsonl", folder / "logs" / "errors.log"]
        for path in watched:
            ident = _identity(path)
            if ident is not None:
                inodes.setdefault(ident, path.as_posix())
        return cls(folders, files, inodes)

    def folder_reason(self, path: Path) -> str | None:
        """Why the folder ``path`` (real path) is never walked, or None."""
        if path in self.folders:
            return "hybrid-rag's own files (indices, logs or data dir configured here)"
        if looks_like_data_dir(path):
            return "another hybrid-rag data dir (store, indices/CURRENT, keys): never ingested"
        return None

    def file_reason(self, path: Path, inode: int | None = None) -> str | None:
        """Why the file ``path`` (real path) is never read, or None; ``inode`` when the caller
        has it for free (``os.DirEntry.inode``), so only a matching one costs a ``stat``."""
        if path in self.files:
            return "hybrid-rag's own file (the store or the API keys file)"
        if path.name == KEYS_FILE_NAME:
            return "an API keys file (hybrid-rag's): never ingested"
        if not self.inodes:
            return None
        if inode is not None and all(ino != inode for _, ino in self.inodes):
            return None
        ident = _identity(path)
        if ident is not None and ident in self.inodes:
            return f"a hard link to hybrid-rag's {self.inodes[ident]}: never ingested"
        return None


def keys_file_path(settings: Settings) -> Path:
    """The API keys file the server reads: ``server.api_keys_file``, or ``api_keys`` in the data dir."""
    configured = settings.server.api_keys_file
    return Path(configured) if configured else settings.data_dir / KEYS_FILE_NAME
