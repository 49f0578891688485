"""Where a file's definitions start, as the chunker cuts: (top-level, nested) 0-based line
indices, each moved above the comments and decorators attached to it.

``definition_cuts`` asks the file's definition finder (``definitions.py``, one parse a file):
Python at its statement starts (``python_cuts``: read from the tree-sitter tree that gives the
file's symbols, or from its ``ast`` tree where that tree holds an error); a language with a
tree-sitter grammar by its units (``unit_cuts``); otherwise, or when that parse fails, the
finder's column-0 rule (``definition_lines.heuristic_cuts``, re-exported here).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from hybrid_rag.code.definitions import Definitions, find_definitions, heuristic_cuts, pull_up

__all__ = ["definition_cuts", "heuristic_cuts", "python_cuts", "unit_cuts"]
from hybrid_rag.code.extract import CONTAINER_KINDS

_PY_COMMENT_RE = re.compile(r"[#@]")  # a Python cut moves above comments and decorators only


def definition_cuts(
    lines: Sequence[str], language: str, path: str = "", definitions: Definitions | None = None
) -> tuple[set[int], set[int]]:
    """(top-level, nested) definition starts of a code file's ``lines``, asked of its finder."""
    definitions = definitions or find_definitions(path, "\n".join(lines), language)
    cuts = (
        python_cuts(lines, definitions)
        if language == "python"
        else unit_cuts(lines, language, path, definitions)
    )
    return cuts if cuts is not None else heuristic_cuts(lines, language)


def python_cuts(
    lines: Sequence[str], definitions: Definitions | None = None
) -> tuple[set[int], set[int]] | None:
    """(top-level, nested) definition starts as 0-based line indices, or None when the file does
    not parse (its definition finder's ``python_starts``: the tree-sitter tree, else ``ast``)."""
    starts = (definitions or find_definitions("", "\n".join(lines), "python")).python_starts
    if starts is None:
        return None
    top = {pull_up(lines, i, _PY_COMMENT_RE) for i in starts[0]}
    nested = {pull_up(lines, i, _PY_COMMENT_RE) for i in starts[1]}
    return top, nested - top


def unit_cuts(
    lines: Sequence[str], language: str, path: str = "", definitions: Definitions | None = None
) -> tuple[set[int], set[int]] | None:
    """(top-level, nested) definition starts from the tree-sitter units (``hybrid_rag.code``), or
    None when no grammar applies, the parse fails badly or it finds no definition. ``path``, when
    given, picks the grammar by extension (``.tsx``, ``.h``), else ``language`` does.

    A unit starts at its attached doc comment and attributes. Top level: a unit that no other
    (but a namespace or module) encloses, and, between those units, the heuristic's cuts (module
    level code); nested: every other unit.
    """
    units = (definitions or find_definitions(path, "\n".join(lines), language)).cut_units
    if not units:
        return None
    top: set[int] = set()
    nested: set[int] = set()
    spans: list[tuple[int, int]] = []  # top-level units, 0-based inclusive
    open_ends: list[int] = []  # end lines of the enclosing non-container units
    for unit in sorted(units, key=lambda u: (u.start_line, -u.end_line)):
        start, end = unit.start_line - 1, unit.end_line - 1
        while open_ends and open_ends[-1] < start:
            open_ends.pop()
        if open_ends:
            nested.add(start)
        else:
            top.add(start)
            spans.append((start, end))
        if unit.kind not in CONTAINER_KINDS:
            open_ends.append(end)
    heuristic_top, _ = heuristic_cuts(lines, language)
    starts = [a for a, _ in spans]
    for i in heuristic_top:
        k = bisect.bisect_right(starts, i) - 1
        if k < 0 or i > spans[k][1]:
            top.add(i)  # outside every top-level unit
    return top, nested - top
