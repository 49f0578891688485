"""Several definitions of one called name in C, C++ and Java told apart without types, for
``references.py`` (RESULTS.md#cpp-unread-project):

* **argument count**: the call's argument list (``code/call_args.py``) against each definition's
  parameter list read from its signature (defaults lower the least count, ``...`` and parameter
  packs lift the most); the one definition the count fits is the call's. A definition whose
  parameter list is not read (a signature cut short, a macro's) fits any count, and when counts
  still tie the candidates stay ambiguous: never a guess;
* **``#if`` alternatives**: a definition written in two branches of one ``#if``/``#ifdef``
  (``code/preproc.py`` records the branches) is one definition, not two candidates: the branch
  holding the call when it is in the same file, else the first branch;
* **argument-dependent lookup** (C++): an unqualified call whose plain-name argument is declared
  with a type of the index finds the functions of that type's namespace too
  (``by_argument_types``; ``references.py`` keeps them beside what ordinary lookup finds, and
  picks one only when both agree).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hybrid_rag.code import preproc
from hybrid_rag.code.call_args import LANGUAGES, decode
from hybrid_rag.code.preproc import branch_of
from hybrid_rag.symbols.model import Reference, Symbol

_OPEN, _CLOSE = "([{<", ")]}>"
_LITERALS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')  # a default's "," or ')' is no bracket
Branches = Mapping[tuple[int, int], tuple[int, int, int]]  # (document, position) -> (group, start, end)


def parameters(symbol: Symbol) -> tuple[int, float] | None:
    """The least and most argument counts ``symbol``'s parameter list takes; None when its
    signature does not show a whole list after the name.

    >>> s = Symbol(1, 1, None, "a.h", "cpp", 0, "f", "function", "f", "int f(int a, int b = 2, ...)", 1, 1)
    >>> parameters(s)
    (1, inf)
    >>> parameters(Symbol(1, 1, None, "a.h", "cpp", 0, "join", "function", "join",
    ...     'std::string join(const T &v, std::string delim = ",")', 1, 1))
    (1, 2.0)
    """
    sig = _LITERALS.sub('""', symbol.signature)
    m = re.search(rf"(?<![\w$]){re.escape(symbol.name)}\s*(?:<[^()]*>\s*)?\(", sig)
    if m is None:
        return None
    inner = _balanced(sig, m.end() - 1)
    if inner is None:
        return None
    items = _split(inner)
    if items is None:
        return None
    if not items or items == ["void"]:
        return 0, 0
    least, most = 0, float(len(items))
    for item in items:
        if "..." in item:
            most = math.inf
        elif not _has_default(item):
            least += 1
    return least, most


def _balanced(text: str, start: int) -> str | None:
    """The text inside the parenthesis opened at ``start`` (None when it does not close)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    return None


def _split(inner: str) -> list[str] | None:
    """The top-level comma-separated items (None when the brackets do not match)."""
    items, depth, cur = [], 0, []
    for ch in inner:
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        if ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last or items:
        items.append(last)
    return None if depth else [i for i in items]


def _has_default(item: str) -> bool:
    depth = 0
    for ch in item:
        depth += ch in _OPEN
        depth -= ch in _CLOSE
        if ch == "=" and depth == 0:
            return True
    return False


def by_count(ref: Reference, found: Sequence[Symbol]) -> list[Symbol] | None:
    """The candidates whose parameter lists take the call's argument count (unread lists kept);
    None when the rule does not apply (no count recorded, no candidate left)."""
    if ref.kind != "call" or ref.language not in LANGUAGES:
        return None
    count, _ = decode(ref.module)
    if count is None:
        return None
    kept = []
    for s in found:
        span = parameters(s)
        if span is None or span[0] <= count <= span[1]:
            kept.append(s)
    return kept or None


def one_of_alternatives(ref: Reference, found: Sequence[Symbol], branches: Branches) -> list[Symbol]:
    """``found`` with each definition written in several branches of one ``#if`` kept once (the
    call's own branch in its file, else the first)."""
    groups: dict[tuple[int, str, int], list[tuple[tuple[int, int], Symbol]]] = {}
    for s in found:
        b = branches.get((s.document_id, s.position))
        if b is not None:
            groups.setdefault((s.document_id, s.qualified_name, b[0]), []).append(((b[1], b[2]), s))
    dropped: set[int] = set()
    for (doc, _, _), members in groups.items():
        spans = sorted({span for span, _ in members})
        if len(spans) < 2:
            continue
        keep = spans[0]
        if doc == ref.document_id:
            keep = branch_of(ref.line, spans) or keep
        dropped.update(s.id for span, s in members if span != keep)
    return [s for s in found if s.id not in dropped]


class Overloads:
    """The rules above over one store state (the ``#if`` branches read once per document)."""

    def __init__(self, source: Any, state: int | None) -> None:
        self.source = source
        self.state = state
        self._branches: dict[tuple[int, int], tuple[int, int, int]] = {}
        self._read: set[int] = set()

    def narrow(self, ref: Reference, found: Sequence[Symbol], via: str) -> tuple[list[Symbol], str]:
        """``found`` less the other branches' copies and the definitions the argument count does
        not fit; ``via`` says when the count left one."""
        kept = list(found)
        if ref.language in preproc.LANGUAGES:
            self._load({s.document_id for s in kept if s.language in preproc.LANGUAGES})
            kept = one_of_alternatives(ref, kept, self._branches)
        if len({(s.document_id, s.start_line) for s in kept}) < 2:
            return kept, via
        fit = by_count(ref, kept)
        if fit is None or len(fit) == len(kept):
            return kept, via
        return fit, f"{via} + argument count"

    def _load(self, docs: set[int]) -> None:
        missing = sorted(docs - self._read)
        if not missing:
            return
        for r in self.source.references(document_ids=missing, kinds=[preproc.ALTERNATIVE], state=self.state):
            b = preproc.decode(r.module)
            if b is not None and r.scope is not None:
                self._branches[(r.document_id, r.scope)] = b
        self._read.update(missing)


def by_argument_types(
    ref: Reference, candidates: Sequence[Symbol], types_of: Callable[[Reference, str], list[Symbol]]
) -> list[Symbol]:
    """C++ argument-dependent lookup: the free functions among ``candidates`` in the namespace of
    a type one of the call's plain-name arguments is declared with (``types_of(name)``: the type
    definitions of the argument ``name`` declared in scope)."""
    if ref.kind != "call" or ref.language not in preproc.LANGUAGES or ref.qualifier:
        return []
    _, names = decode(ref.module)
    spaces = {t.parent for n in names for t in types_of(ref, n) if t.parent}
    if not spaces:
        return []
    return [s for s in candidates if s.kind == "function" and s.parent in spaces]
