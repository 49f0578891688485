"""Load the text and source files inside a zip archive, in memory, refusing unsafe archives whole.

Nothing is extracted to disk: members are read with ``zipfile`` into memory, so a hostile
member name cannot write anywhere. Still, an archive is refused as a whole (``InputError``,
nothing returned, so nothing is half-ingested) when any member

* has an unsafe name: ``..`` as a path component, an absolute path, a drive letter (``C:``);
  backslashes count as separators, as an archive written on Windows means them;
* is a symbolic link (``S_IFLNK`` in the Unix mode bits of its external attributes), is
  encrypted, or appears twice under the same normalised name;
* inflates more than ``max_ratio`` times its compressed size (only checked for members of at
  least ``RATIO_FLOOR_BYTES``: a small file of repeated lines is harmless, whatever its ratio);

or when the archive has more than ``max_members`` members, declares more than
``max_total_bytes`` uncompressed bytes or an overall ratio over ``max_ratio``, or is not a
readable zip (a truncated file, a bad CRC). Declared sizes are checked before anything is
read, and the bytes actually read are counted against ``max_total_bytes`` as well.

Then the members are treated like the files of a folder walk (``loaders.iter_files``): the
``loading.ignore`` list and the archive's own ``.gitignore`` files are honoured, documents (PDF,
DOCX, ...) are read as their converted text (``ingest/converters``), and binary,
too large, undecodable or empty members are skipped with the reason the ingest summary shows.
A member's path is ``"<absolute zip path>/<member path>"``, so citations read
``/docs/manual.zip/guide/intro.md:10-20``.
"""

from __future__ import annotations

import hashlib
import re
import stat
import zipfile
import zlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pathspec

from hybrid_rag.errors import InputError
from hybrid_rag.ingest.converters.cache import Conversion
from hybrid_rag.ingest.loaders import (
    BINARY_EXTENSIONS,
    IgnoreRules,
    _git_ignored,
    classify,
    decode_text,
    normalize_newlines,
)
from hybrid_rag.settings import ArchiveSettings, LoadingSettings
from hybrid_rag.types import LoadedFile, SkippedFile

RATIO_FLOOR_BYTES = 1 << 20  # the compression-ratio limit applies from 1 MiB uncompressed
READ_BLOCK_BYTES = 1 << 16
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
# zipfile's errors for a damaged archive or member (BadZipFile covers a bad CRC).
_CORRUPT = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError)


def is_zip(path: Path | str) -> bool:
    """Whether ``path`` is a file named ``*.zip`` (any case), to be opened with :func:`load_zip`.

    The name decides, not the content: a damaged ``.zip`` is then reported as such instead of
    being skipped as binary, and zip containers such as ``.docx`` or ``.jar`` stay binary files.
    """
    p = Path(path)
    return p.suffix.lower() == ".zip" and p.is_file()


def unsafe_name_reason(name: str) -> str | None:
    """Why a member name is unsafe to use as a path (``None`` if it is safe).

    >>> unsafe_name_reason("../evil.txt")
    'escapes the archive (a ".." component)'
    """
    normal = name.replace("\\", "/")
    if normal.startswith("/"):
        return "has an absolute path"
    if _DRIVE_RE.match(normal):
        return "has a drive letter"
    if ".." in normal.split("/"):
        return 'escapes the archive (a ".." component)'
    return None


def member_parts(name: str) -> tuple[str, ...]:
    """A safe member name's path components, without empty and ``.`` parts: ``"./a//b"`` -> ``("a", "b")``."""
    return tuple(part for part in name.replace("\\", "/").split("/") if part not in ("", "."))


def member_refusal(info: zipfile.ZipInfo, max_ratio: float) -> str | None:
    """Why one member makes the whole archive unacceptable, from its header alone (``None`` if none)."""
    reason = unsafe_name_reason(info.filename)
    if reason:
        return reason
    if stat.S_ISLNK(info.external_attr >> 16):
        return "is a symbolic link"
    if info.flag_bits & 0x1:
        return "is encrypted"
    ratio = compression_ratio(info.file_size, info.compress_size)
    if info.file_size >= RATIO_FLOOR_BYTES and ratio > max_ratio:
        return (
            f"inflates {ratio:.0f} times ({info.file_size} bytes from {info.compress_size}), "
            f"more than archive.max_ratio {max_ratio:g}"
        )
    return None


def compression_ratio(uncompressed: int, compressed: int) -> float:
    """Uncompressed over compressed size; a member stored in zero bytes counts as one byte."""
    return uncompressed / max(compressed, 1)


def load_zip(
    path: Path | str, loading: LoadingSettings, limits: ArchiveSettings, conversion: Conversion | None = None
) -> tuple[list[LoadedFile], list[SkippedFile]]:
    """The loadable members of a zip archive and the skipped ones, both in sorted member order.

    Raises InputError, before returning anything, if the archive breaks any limit or cannot be read.
    """
    zip_path = Path(path).expanduser()
    if not zip_path.exists():
        raise InputError(f"path does not exist: {path}")
    zip_path = zip_path.resolve()
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as exc:
        raise InputError(f"not a valid zip archive: {zip_path} ({_one_line(exc)})") from None
    except OSError as exc:
        raise InputError(f"cannot read {zip_path}: {exc.strerror or exc}") from None
    with archive:
        return _ZipLoader(archive, zip_path, loading, limits, conversion or Conversion()).load()


class _ZipLoader:
    """One pass over an open archive: check every header, then read the wanted members."""

    def __init__(
        self,
        archive: zipfile.ZipFile,
        zip_path: Path,
        loading: LoadingSettings,
        limits: ArchiveSettings,
        conversion: Conversion,
    ) -> None:
        self.archive = archive
        self.conversion = conversion
        self.zip_path = zip_path
        self.loading = loading
        self.limits = limits
        self.rules = IgnoreRules(loading.ignore)
        self.gitignores: dict[tuple[str, ...], pathspec.GitIgnoreSpec] = {}
        self.bytes_read = 0
        self._ignored_dirs: dict[tuple[str, ...], bool] = {}

    def refuse(self, reason: str) -> InputError:
        return InputError(f"refusing zip archive {self.zip_path}: {reason}")

    def load(self) -> tuple[list[LoadedFile], list[SkippedFile]]:
        members = self._checked_members()
        if self.loading.use_gitignore:
            self._read_gitignores(members)
        loaded: list[LoadedFile] = []
        skipped: list[SkippedFile] = []
        for parts, info in members:
            if self._ignored(parts, is_dir=False):
                continue
            item = self._load_member(parts, info)
            (loaded if isinstance(item, LoadedFile) else skipped).append(item)
        return loaded, skipped

    def _read_gitignores(self, members: Sequence[tuple[tuple[str, ...], zipfile.ZipInfo]]) -> None:
        """Parse each ``.gitignore`` outside ignored folders, shallowest first (as a walk meets them)."""
        found = [(parts, info) for parts, info in members if parts[-1] == ".gitignore"]
        for parts, info in sorted(found, key=lambda item: (len(item[0]), item[0])):
            folder = parts[:-1]
            if info.file_size > self.loading.max_file_bytes or self._ignored(folder, is_dir=True):
                continue
            try:
                text = self._read(info).decode("utf-8", errors="replace")
            except NotImplementedError:  # an unsupported compression method: as if absent
                continue
            self.gitignores[folder] = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
        self._ignored_dirs.clear()

    def _checked_members(self) -> list[tuple[tuple[str, ...], zipfile.ZipInfo]]:
        """Every file member with its path parts, sorted; raises if any header breaks a limit."""
        infos = self.archive.infolist()
        limits = self.limits
        if len(infos) > limits.max_members:
            raise self.refuse(f"{len(infos)} members, more than archive.max_members {limits.max_members}")
        members: dict[tuple[str, ...], zipfile.ZipInfo] = {}
        declared = compressed = 0
        for info in infos:
            reason = member_refusal(info, limits.max_ratio)
            if reason:
                raise self.refuse(f"member {info.filename!r} {reason}")
            declared += info.file_size
            compressed += info.compress_size
            parts = member_parts(info.filename)
            if info.is_dir() or not parts:
                continue
            if parts in members:
                raise self.refuse(f"member {'/'.join(parts)!r} appears more than once")
            members[parts] = info
        if declared > limits.max_total_bytes:
            raise self.refuse(
                f"{declared} uncompressed bytes, more than archive.max_total_bytes {limits.max_total_bytes}"
            )
        ratio = compression_ratio(declared, compressed)
        if declared >= RATIO_FLOOR_BYTES and ratio > limits.max_ratio:
            raise self.refuse(
                f"inflates {ratio:.0f} times overall ({declared} bytes from {compressed}), "
                f"more than archive.max_ratio {limits.max_ratio:g}"
            )
        return sorted(members.items())

    def _ignored(self, parts: tuple[str, ...], *, is_dir: bool) -> bool:
        """Whether the ignore list or a ``.gitignore`` drops this entry or one of its folders."""
        if not parts:
            return False
        if len(parts) > 1:
            folder = parts[:-1]
            if folder not in self._ignored_dirs:
                self._ignored_dirs[folder] = self._ignored(folder, is_dir=True)
            if self._ignored_dirs[folder]:
                return True
        if self.rules.matches((*self.zip_path.parts, *parts), len(parts), is_dir):
            return True
        specs = [(d, self.gitignores[parts[:d]]) for d in range(len(parts)) if parts[:d] in self.gitignores]
        return bool(specs) and _git_ignored(specs, parts, is_dir)

    def _load_member(self, parts: tuple[str, ...], info: zipfile.ZipInfo) -> LoadedFile | SkippedFile:
        """Mirror ``loaders.load_file`` for one member: skip with a reason, or decode it."""
        shown = f"{self.zip_path.as_posix()}/{'/'.join(parts)}"
        suffix = Path(parts[-1]).suffix.lower()
        if self.conversion.handles(parts[-1]):
            return self._load_document(shown, info)
        if suffix in BINARY_EXTENSIONS:
            return SkippedFile(shown, f"binary file type ({suffix})")
        max_bytes = self.loading.max_file_bytes
        if info.file_size > max_bytes:
            return SkippedFile(shown, f"too large ({info.file_size} bytes > max_file_bytes {max_bytes})")
        if info.file_size == 0:
            return SkippedFile(shown, "empty file")
        try:
            raw = self._read(info)
        except NotImplementedError:
            return SkippedFile(shown, f"unsupported zip compression method {info.compress_type}")
        text, reason = decode_text(raw)
        if text is None:
            return SkippedFile(shown, reason)
        if not text.strip():
            return SkippedFile(shown, "empty file (whitespace only)")
        source_type, language = classify(parts[-1])
        return LoadedFile(
            path=shown,
            text=normalize_newlines(text),
            sha256=hashlib.sha256(raw).hexdigest(),
            size=len(raw),
            mtime=_member_mtime(info),
            source_type=source_type,
            language=language,
        )

    def _load_document(self, shown: str, info: zipfile.ZipInfo) -> LoadedFile | SkippedFile:
        """A PDF, DOCX, ... member, read as its converted text (``convert.*`` limits)."""
        limit = self.conversion.settings.max_file_bytes
        if info.file_size > limit:
            return SkippedFile(shown, f"too large ({info.file_size} bytes > convert.max_file_bytes {limit})")
        try:
            raw = self._read(info)
        except NotImplementedError:
            return SkippedFile(shown, f"unsupported zip compression method {info.compress_type}")
        return self.conversion.load(shown, raw, _member_mtime(info))

    def _read(self, info: zipfile.ZipInfo) -> bytes:
        """A member's bytes, counting them against ``max_total_bytes`` while they are inflated.

        ``zipfile`` stops at the declared size and checks the CRC, so a header that understates
        its member fails as a corrupt archive; reading one byte past the declared size makes the
        same guarantee hold here, whatever the library does.
        """
        blocks: list[bytes] = []
        size = 0
        limit = self.limits.max_total_bytes
        try:
            with self.archive.open(info) as handle:
                while block := handle.read(min(READ_BLOCK_BYTES, info.file_size + 1 - size)):
                    size += len(block)
                    self.bytes_read += len(block)
                    if self.bytes_read > limit:
                        raise self.refuse(f"more than archive.max_total_bytes {limit} uncompressed bytes")
                    if size > info.file_size:
                        raise self.refuse(f"member {info.filename!r} holds more bytes than it declares")
                    blocks.append(block)
        except _CORRUPT as exc:
            raise InputError(
                f"not a valid zip archive: {self.zip_path} (member {info.filename!r}: {_one_line(exc)})"
            ) from None
        return b"".join(blocks)


def _member_mtime(info: zipfile.ZipInfo) -> float:
    """The member's modification time (zip stores local time); 0.0 when the header's date is invalid."""
    try:
        return datetime(*info.date_time).timestamp()
    except (ValueError, OverflowError, OSError):
        return 0.0


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
