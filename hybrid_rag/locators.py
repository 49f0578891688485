"""Native places for lines of converted text: what a chunk's metadata holds, what a quote shows.

At the bottom of the house (it imports nothing of ours): ``types`` and ``ingest/converters`` use it.

A chunk of a converted document stores, in its own metadata, the locators in force over its
lines (``"locators": [[line, kind, number, name, step], ...]``) and its first unit, plus the
last one when it spans several: ``{"page": 3}``, ``{"page": 3, "page_end": 4}``,
``{"sheet": "Q1", "row": 5, "row_end": 9}``. The rule for a chunk that spans units: the first
unit is the chunk's (``page >= 3`` filters on it), the range is in ``page_end`` and in the label.
A quote, a few lines of the chunk, gets the exact units of its own lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Locator:
    """From text line ``line`` (1-based) of a converted document on, the text is unit ``number``
    of kind ``kind`` ("page", "slide", "cell", "row", "chapter"; ``ingest/converters``).

    ``step`` 1 (spreadsheet rows): each further line is the next unit, so one locator covers a run
    of rows. ``name`` is a sheet's name (rows) or a chapter's file (EPUB).
    """

    line: int
    kind: str
    number: int
    name: str = ""
    step: int = 0

    def at(self, line: int) -> int:
        """The unit number at ``line`` (at or after ``self.line``)."""
        return self.number + self.step * (line - self.line)


KINDS = ("page", "slide", "cell", "row", "chapter")  # the metadata keys (and filter fields) they set
_WORDS = {"page": ("p.", "pp."), "slide": ("slide ", "slides "), "cell": ("cell ", "cells "),
          "row": ("row ", "rows "), "chapter": ("chapter ", "chapters ")}  # fmt: skip


def _in_force(locators: Sequence[Locator], start: int, end: int) -> list[Locator]:
    """The locators covering lines ``start..end``: the last one at or before ``start``, then those inside."""
    out: list[Locator] = []
    for loc in locators:
        if loc.line <= start:
            out = [loc]
        elif loc.line <= end:
            out.append(loc)
        else:
            break
    return out


def fields(locators: Sequence[Locator], start: int, end: int) -> dict[str, Any]:
    """The locator fields of lines ``start..end``: ``{"page": 3, "page_end": 4}``; {} without locators."""
    used = _in_force(locators, start, end)
    if not used:
        return {}
    first, last = used[0], used[-1]
    kind = first.kind
    out: dict[str, Any] = {kind: first.at(max(start, first.line))}
    if first.name and kind == "row":
        out["sheet"] = first.name
    end_number = last.at(end)
    if end_number != out[kind] or last.name != first.name:
        out[f"{kind}_end"] = end_number
        if last.name != first.name and kind == "row":
            out["sheet_end"] = last.name
    return out


def chunk_meta(locators: Sequence[Locator], start: int, end: int) -> dict[str, Any]:
    """What a chunk of lines ``start..end`` stores: its fields and the locators over it."""
    used = _in_force(locators, start, end)
    if not used:
        return {}
    return {
        **fields(used, start, end),
        "locators": [[loc.line, loc.kind, loc.number, loc.name, loc.step] for loc in used],
    }


def stored_locators(meta: Mapping[str, Any]) -> list[Locator]:
    """The locators a chunk's metadata holds (``chunk_meta``); [] for any other chunk."""
    raw = meta.get("locators")
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if isinstance(item, list) and len(item) == 5:
            line, kind, number, name, step = item
            if isinstance(line, int) and isinstance(number, int) and kind in KINDS:
                out.append(Locator(line, str(kind), number, str(name), int(step)))
    return out


def label(found: Mapping[str, Any]) -> str:
    """A locator as a citation shows it: ``p.3``, ``pp.3-4``, ``slide 2``, ``cells 4-6``,
    ``Q1 rows 5-9``; "" for none.

    >>> label({"page": 3}), label({"page": 3, "page_end": 4}), label({"sheet": "Q1", "row": 5, "row_end": 9})
    ('p.3', 'pp.3-4', 'Q1 rows 5-9')
    """
    for kind in KINDS:
        if kind not in found:
            continue
        one, many = _WORDS[kind]
        first, last = found[kind], found.get(f"{kind}_end")
        sheet = f"{found['sheet']} " if found.get("sheet") else ""
        if last is None:
            return f"{sheet}{one}{first}"
        if "sheet_end" in found:
            return f"{sheet}{one}{first} - {found['sheet_end']} {one}{last}"
        return f"{sheet}{many}{first}-{last}"
    return ""


def quote_locator(meta: Mapping[str, Any], start: int, end: int) -> dict[str, Any]:
    """The locator fields of lines ``start..end`` of a stored chunk with ``meta``; {} for a plain file."""
    locators = stored_locators(meta)
    return fields(locators, start, end) if locators else {}


def cited(path: str, start: int, end: int, meta: Mapping[str, Any] | None) -> str:
    """``path:start-end``, with the native place of a converted document's lines in parentheses.

    >>> cited("manual.pdf", 7, 8, {"page": 3, "locators": [[1, "page", 1, "", 0], [7, "page", 3, "", 0]]})
    'manual.pdf:7-8 (p.3)'
    """
    where = label(quote_locator(meta or {}, start, end))
    return f"{path}:{start}-{end}" + (f" ({where})" if where else "")
