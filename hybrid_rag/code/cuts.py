"""Where a file's definitions start, as the chunker cuts: (top-level, nested) 0-based line
indices, each moved above the comments and decorators attached to it.

``definition_cuts`` asks the file's definition finder (``definitions.py``, one parse a file):
Python at its statement starts (``python_cuts``: read from the tree-sitter tree that gives the
file's symbols, or from its ``ast`` tree where that tree holds an error); a language with a
tree-sitter grammar by its units (``unit_cuts``); otherwise, or when that parse fails, the column-0
rule (``heuristic_cuts``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from hybrid_rag.code.definitions import Definitions, find_definitions
from hybrid_rag.code.extract import CONTAINER_KINDS

_NESTED_WORDS = (
    "def|class|function|func|fn|pub|export|public|private|protected|internal|static|abstract|final|"
    "sealed|async|override|interface|struct|enum|impl|trait|fun|module|namespace|object|sub|proc|"
    "describe|it|test"
)
_DEF_RE = re.compile(
    rf"(?:{_NESTED_WORDS}|type|union|const|let|var|val|package|record|typedef|template|mod)\b"
)
_NESTED_RE = re.compile(rf"(?:{_NESTED_WORDS})\b")  # not const/let/var: those are everywhere in bodies
_SQL_DEF_RE = re.compile(r"(?i)(?:create|alter|drop|insert|update|delete|select|with|begin)\b")
_COMMENT_RE = re.compile(r"(?://|/\*|\*|--|@|#(?:[\s#!\[]|$)|;;|%)")
_PY_COMMENT_RE = re.compile(r"[#@]")
_CLOSER_RE = re.compile(r"(?:[})\]]|end\b|fi\b|done\b|esac\b|</)")
_KEY_LANGUAGES = frozenset({"yaml", "toml", "ini", "make", "dockerfile"})  # every col-0 line opens a unit


def _blank(line: str) -> bool:
    return not line.strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _pull_up(lines: Sequence[str], i: int, comment: re.Pattern[str] = _COMMENT_RE) -> int:
    """Move a cut at line ``i`` above the comments, decorators and annotations attached to it
    (non-blank lines right above, indented at most one column more than line ``i``)."""
    depth = _indent(lines[i]) + 1
    while i > 0 and not _blank(lines[i - 1]) and _indent(lines[i - 1]) <= depth:
        if not comment.match(lines[i - 1].lstrip()):
            break
        i -= 1
    return i


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
    top = {_pull_up(lines, i, _PY_COMMENT_RE) for i in starts[0]}
    nested = {_pull_up(lines, i, _PY_COMMENT_RE) for i in starts[1]}
    return top, nested - top


def heuristic_cuts(lines: Sequence[str], language: str) -> tuple[set[int], set[int]]:
    """(top-level, nested) definition starts for languages without a parser here.

    Top level: a line at column 0 that is not a comment or a closing bracket and either opens
    a definition (``def``, ``func``, ``pub``, ``export``, ...), follows a blank line or a
    closing bracket at column 0, or (YAML, TOML, ...) is any key. Nested: an indented line that
    opens a definition. Both are moved above their attached comments.
    """
    top: set[int] = set()
    nested: set[int] = set()
    every_key = language in _KEY_LANGUAGES
    sql = language == "sql"
    for i, line in enumerate(lines):
        if _blank(line):
            continue
        stripped = line.lstrip()
        if _COMMENT_RE.match(stripped):
            continue
        if line[0] in " \t":
            if _NESTED_RE.match(stripped):
                nested.add(_pull_up(lines, i))
            continue
        opens = bool(_DEF_RE.match(stripped) or (sql and _SQL_DEF_RE.match(stripped)))
        if _CLOSER_RE.match(line):
            continue
        prev = lines[i - 1] if i else ""
        if opens or every_key or _blank(prev) or (not prev[0].isspace() and _CLOSER_RE.match(prev)):
            top.add(_pull_up(lines, i))
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
