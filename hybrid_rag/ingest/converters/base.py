"""What every converter shares: the result (text plus a locator map), the refusal, the Protocol.

A converter turns a file's bytes into plain text (Markdown headings where the format has them)
and says which lines of that text come from which native unit: a PDF page, a slide, a notebook
cell, a spreadsheet row, an EPUB chapter. The text is what is stored, chunked and quoted, so a
quote is always exact lines of it; the locators add the native place to the citation
(``manual.pdf:12-18 (p.3)``).
"""

from __future__ import annotations

import zipfile
import zlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hybrid_rag.settings import ConvertSettings
from hybrid_rag.types import Locator

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a compound file: .doc, or a password-protected .docx
PAGE, SLIDE, CELL, ROW, CHAPTER = "page", "slide", "cell", "row", "chapter"  # locator kinds


class Unconvertible(Exception):
    """A file that cannot become text; ``str(exc)`` is the skip reason the ingest summary shows."""


@dataclass(frozen=True)
class Converted:
    """A document as text, its locators sorted by line, and its format's name."""

    text: str
    format: str
    locators: tuple[Locator, ...] = ()
    language: str = "text"  # "markdown" when the text has Markdown headings or fences


class Converter(Protocol):
    """One format: ``convert`` returns the text or raises :class:`Unconvertible` with a reason."""

    name: str

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted: ...


@dataclass
class Assembler:
    """Builds a converted text unit by unit, recording where each unit starts.

    Units are separated by one blank line; lines lose trailing white space; a unit with no text
    adds nothing (so an empty page leaves no locator and no line).
    """

    kind: str
    lines: list[str] = field(default_factory=list)
    locators: list[Locator] = field(default_factory=list)

    def unit(self, number: int, text: str, name: str = "") -> None:
        lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if not lines:
            return
        if self.lines:
            self.lines.append("")
        self.locators.append(Locator(len(self.lines) + 1, self.kind, number, name))
        self.lines.extend(lines)

    def row(self, number: int, line: str, name: str = "") -> None:
        """One spreadsheet row as one line; consecutive rows of a sheet share one locator."""
        last = self.locators[-1] if self.locators else None
        here = len(self.lines) + 1
        if last is None or last.name != name or last.step != 1 or last.at(here) != number:
            if last is not None and last.name != name:
                self.lines.append("")
                here += 1
            self.locators.append(Locator(here, self.kind, number, name, step=1))
        self.lines.append(line)

    def done(self, format_name: str, language: str = "text") -> Converted:
        return Converted(
            "\n".join(self.lines) + ("\n" if self.lines else ""), format_name, tuple(self.locators), language
        )


def locate(locators: Sequence[Locator], line: int) -> tuple[Locator, int] | None:
    """The locator in force at ``line`` and the unit number there; None before the first."""
    i = bisect_right([loc.line for loc in locators], line) - 1
    if i < 0:
        return None
    return locators[i], locators[i].at(line)


def check_zip_container(raw: bytes, what: str, settings: ConvertSettings) -> None:
    """Refuse a zip-based document (DOCX, PPTX, XLSX, EPUB) that is no zip, is encrypted, or
    would inflate past ``convert.max_unzipped_bytes`` or ``convert.max_ratio`` (a zip bomb),
    from its headers alone, before any library opens it."""
    import io

    if raw.startswith(OLE_MAGIC):  # Office encrypts a DOCX/PPTX/XLSX into an OLE compound file
        raise Unconvertible(f"encrypted {what} (password protected), or an old binary Office file")
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError) as exc:
        raise Unconvertible(f"corrupt {what} (not a readable zip container: {exc})") from None
    if any(info.flag_bits & 0x1 for info in infos):
        raise Unconvertible(f"encrypted {what} (password protected)")
    declared = sum(info.file_size for info in infos)
    compressed = max(sum(info.compress_size for info in infos), 1)
    if declared > settings.max_unzipped_bytes:
        raise Unconvertible(
            f"{what} inflates to {declared} bytes > convert.max_unzipped_bytes {settings.max_unzipped_bytes}"
        )
    if declared >= 1 << 20 and declared / compressed > settings.max_ratio:
        raise Unconvertible(
            f"{what} inflates {declared / compressed:.0f} times ({declared} bytes from {compressed}), "
            f"more than convert.max_ratio {settings.max_ratio:g} (a zip bomb?)"
        )


def check_units(count: int, what: str, settings: ConvertSettings) -> None:
    """Refuse a document with more pages (slides, cells, chapters) than ``convert.max_pages``."""
    if count > settings.max_pages:
        raise Unconvertible(f"{count} {what} > convert.max_pages {settings.max_pages}")


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
