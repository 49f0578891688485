"""The ``#if`` branches that C and C++ definitions are written in: a definition inside a
conditional (``#if``/``#ifdef`` ... ``#elif`` ... ``#else`` ... ``#endif``) with a second branch
gets one reference of kind ``alternative``: its name, its first line, ``scope`` its own position
among the file's units, ``module`` ``GROUP:START-END`` (the first line of the innermost such
conditional holding it and the lines of its branch). ``symbols/overloads.py`` reads them: a
name defined in two branches of one conditional is one definition, not an ambiguity
(RESULTS.md#cpp-unread-project). Like ``binding`` references they are never uses (``refs``
and ``callers`` leave them out).

>>> branch_of(5, [(1, 3), (4, 9)]), branch_of(12, [(1, 3), (4, 9)])
((4, 9), None)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from hybrid_rag.code.units import CodeReference, CodeUnit

ALTERNATIVE = "alternative"
LANGUAGES = frozenset({"c", "cpp"})
_FIRST = ("preproc_if", "preproc_ifdef")  # a conditional and its first branch
_LATER = ("preproc_elif", "preproc_elifdef", "preproc_else")  # a later branch, nested in the first
_ENCODED = re.compile(r"^(\d+):(\d+)-(\d+)$")


@functools.cache
def _query(language: Any) -> Any:
    import tree_sitter

    kinds = [k for k in (*_FIRST, *_LATER) if _known(language, k)]
    return tree_sitter.Query(language, "[" + " ".join(f"({k})" for k in kinds) + "] @branch")


def _known(language: Any, kind: str) -> bool:
    try:
        return bool(language.id_for_node_kind(kind, True))
    except Exception:  # an older binding: try the pattern
        return kind in ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_else")


def alternatives(
    language: Any, root: Any, units: Sequence[CodeUnit], spans: Sequence[tuple[int, int, int]]
) -> list[CodeReference]:
    """One ``alternative`` reference for each unit inside a conditional (``spans``: the units'
    (start byte, end byte, index), as ``extract.py`` builds them)."""
    import tree_sitter

    nodes = [n for ns in tree_sitter.QueryCursor(_query(language)).captures(root).values() for n in ns]
    if not nodes:
        return []
    branches = []  # (start byte, end byte, group line, first line, last line)
    for n in nodes:
        later = n.child_by_field_name("alternative")
        if later is None and n.type in _FIRST:
            continue  # one branch (a header guard, a lone ``#ifdef``): nothing to choose between
        end = later.start_byte if later is not None else n.end_byte
        last = (later.start_point[0] if later is not None else n.end_point[0] + 1) or 1
        top = n
        while top.type in _LATER and top.parent is not None:
            top = top.parent
        branches.append((n.start_byte, end, top.start_point[0] + 1, n.start_point[0] + 1, last))
    branches.sort(key=lambda b: (b[0], -b[1]))
    out = []
    stack: list[tuple[int, int, int, int, int]] = []  # the branches open at the unit: they nest
    i = 0
    for start, _, index in sorted(spans):  # one sweep, the innermost open branch on top
        while i < len(branches) and branches[i][0] < start:
            while stack and stack[-1][1] <= branches[i][0]:
                stack.pop()
            stack.append(branches[i])
            i += 1
        while stack and stack[-1][1] <= start:
            stack.pop()
        inner = stack[-1] if stack else None
        if inner is not None:
            u = units[index]
            module = f"{inner[2]}:{inner[3]}-{inner[4]}"
            out.append(
                CodeReference(name=u.name, kind=ALTERNATIVE, line=u.start_line, scope=index, module=module)
            )
    return out


def decode(module: str) -> tuple[int, int, int] | None:
    """(group line, branch's first line, last line) of an ``alternative`` reference."""
    m = _ENCODED.match(module)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def branch_of(line: int, spans: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """The span among ``spans`` holding ``line``."""
    return next((s for s in spans if s[0] <= line <= s[1]), None)
