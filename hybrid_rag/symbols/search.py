"""Symbol lookups: by name (exact, prefix, fuzzy) and a file's outline.

``find`` ranks exact matches first (the name, or the qualified name when the query has a
separator: ``Pool.get``, ``Foo::bar``, ``pkg.Class.method``), then names that start with the query;
when there are neither (mode ``auto``), close names (``difflib``'s ratio, at least
``FUZZY_CUTOFF``): a misspelt name still finds its definition, a right one is not buried.
Case-sensitive equality beats case-insensitive; within a tier, definitions outside tests come
first, then definitions before bare declarations (a C++ header's ``int take();``, whose signature
keeps its ``;``), then by path and position. Go's method spelling ``(*Mux).Mount`` is read as
``Mux.Mount``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hybrid_rag.code.members import SYMBOL_KINDS
from hybrid_rag.errors import InputError
from hybrid_rag.symbols.model import Symbol, SymbolMatch
from hybrid_rag.types import ConfigEnum

FUZZY_CUTOFF = 0.75  # difflib ratio: "ConectionPool" finds "ConnectionPool" (0.96), "Pool" does not
_SEPARATORS = re.compile(r"::|->|[.#/\\]")
_RECEIVER = re.compile(r"^\(\s*[*&]?\s*([A-Za-z_][\w.]*)\s*\)")  # Go: (*Mux).Mount, (Mux).Mount
_TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testing|spec|__tests__)(?:/|$)|(?:^|/)test_[^/]*$|_test\.\w+$")


class LookupMode(ConfigEnum):
    AUTO = "auto"  # exact, then prefix matches; fuzzy ones when there are neither
    EXACT = "exact"
    PREFIX = "prefix"
    FUZZY = "fuzzy"


class SymbolSource(Protocol):
    """What lookups read: ``MetadataStore``'s symbol methods."""

    def symbols(self, **kwargs: Any) -> list[Symbol]: ...

    def symbol_names(self, **kwargs: Any) -> list[str]: ...


def split_qualified(name: str) -> list[str]:
    """A qualified name's parts, whatever the language's separator.

    >>> split_qualified("ClientOptions.compression"), split_qualified("Foo::bar")
    (['ClientOptions', 'compression'], ['Foo', 'bar'])
    >>> split_qualified("(*Mux).Mount")
    ['Mux', 'Mount']
    """
    name = _RECEIVER.sub(r"\1", name.strip())
    return [p for p in _SEPARATORS.split(name) if p]


def mode_of(value: str | None) -> LookupMode:
    try:
        return LookupMode.from_str(value or "auto")
    except Exception:
        valid = ", ".join(m.value for m in LookupMode)
        raise InputError(f"unknown lookup mode {value!r}; valid modes: {valid}") from None


def check_kinds(kinds: Sequence[str] | None) -> list[str] | None:
    """``kinds`` lower-cased; an unknown one is an error naming the valid kinds (it would find
    nothing, silently)."""
    if not kinds:
        return None
    wanted = [k.strip().lower() for k in kinds]
    unknown = [k for k in wanted if k not in SYMBOL_KINDS]
    if unknown:
        raise InputError(f"unknown kind {unknown[0]!r}; valid kinds: {', '.join(SYMBOL_KINDS)}")
    return wanted


def find(
    source: SymbolSource,
    name: str,
    *,
    mode: str | None = None,
    kinds: Sequence[str] | None = None,
    path_glob: str | None = None,
    state: int | None = None,
    limit: int = 20,
) -> list[SymbolMatch]:
    """Definitions matching ``name`` (see the module docstring), best first, at most ``limit``."""
    lookup = mode_of(mode)
    kinds = check_kinds(kinds)
    if not name:
        raise InputError("empty symbol name: give a name such as ConnectionPool or Pool.get")
    parts = split_qualified(name)
    if not parts or limit <= 0:  # only blanks or separators ("::"): no definition has that name
        return []
    last, qualified = parts[-1], ".".join(parts) if len(parts) > 1 else None
    where: dict[str, Any] = {"state": state, "path_glob": path_glob, "kinds": list(kinds) if kinds else None}
    found: dict[int, SymbolMatch] = {}

    def keep(symbol: Symbol, match: str, score: float) -> None:
        if qualified is not None and not _qualified_ends(symbol.qualified_name, parts):
            return
        old = found.get(symbol.id)
        if old is None or score > old.score:
            found[symbol.id] = SymbolMatch(symbol, match, score)

    if lookup in (LookupMode.AUTO, LookupMode.EXACT):
        for symbol in source.symbols(names=[last], **where):
            keep(symbol, "exact", 1.0 if symbol.name == last else 0.9)
    if lookup in (LookupMode.AUTO, LookupMode.PREFIX):
        for symbol in source.symbols(prefix=last, **where):
            if symbol.name.lower() != last.lower():
                keep(symbol, "prefix", 0.5 + 0.3 * len(last) / len(symbol.name))
    if lookup is LookupMode.FUZZY or (lookup is LookupMode.AUTO and not found):
        close = _close_names(last, source.symbol_names(**where), limit)
        if close:
            for symbol in source.symbols(names=list(close), **where):
                if symbol.id not in found:
                    keep(symbol, "fuzzy", 0.5 * close.get(symbol.name, 0.0))
    ranked = sorted(found.values(), key=lambda m: _order(m))
    return ranked[:limit]


def _order(m: SymbolMatch) -> tuple[float, bool, bool, str, int]:
    declared = m.symbol.signature.endswith(";")  # a declaration without its body (extract._signature)
    return (-m.score, is_test_path(m.symbol.path), declared, m.symbol.path, m.symbol.position)


def is_test_path(path: str) -> bool:
    """Whether a path is a test file or under a tests folder (those rank after the code they test)."""
    return bool(_TEST_PATH.search(path))


FUNCTION_KINDS = frozenset({"function", "method"})  # the kinds a declaration without a body can be


def declares_only(signature: str) -> bool:
    """Whether a signature is a declaration without its body: a C/C++ prototype, a Rust trait's
    or a Java interface's method signature (it ends with ``;``); its definition is elsewhere."""
    return signature.rstrip().endswith(";")


def _qualified_ends(qualified_name: str, parts: Sequence[str]) -> bool:
    """Whether a qualified name ends with the query's parts (case-insensitive): ``pkg.Pool.get``
    ends with ``Pool.get``; so does ``Pool::get``."""
    have = [p.lower() for p in split_qualified(qualified_name)]
    want = [p.lower() for p in parts]
    return have[-len(want) :] == want


def _close_names(name: str, names: Sequence[str], limit: int) -> dict[str, float]:
    """Names within ``FUZZY_CUTOFF`` of ``name`` (case-insensitive ratio), with their ratios."""
    lowered: dict[str, list[str]] = {}
    for n in names:
        lowered.setdefault(n.lower(), []).append(n)
    want = name.lower()
    matcher = difflib.SequenceMatcher(b=want, autojunk=False)
    out: dict[str, float] = {}
    for low, originals in lowered.items():
        if low == want:
            continue
        matcher.set_seq1(low)
        if matcher.real_quick_ratio() < FUZZY_CUTOFF or matcher.quick_ratio() < FUZZY_CUTOFF:
            continue
        ratio = matcher.ratio()
        if ratio >= FUZZY_CUTOFF:
            for n in originals:
                out[n] = ratio
    best = sorted(out.items(), key=lambda item: (-item[1], item[0]))[: max(limit, 1) * 4]
    return dict(best)


@dataclass(frozen=True)
class OutlineEntry:
    """One definition of a file's outline with its nesting depth (0 at the top level)."""

    symbol: Symbol
    depth: int


def outline(symbols: Sequence[Symbol]) -> list[OutlineEntry]:
    """A file's definitions as a tree, flattened: each definition under its parent (the definition
    its ``parent`` names: the one whose lines hold it, else the first of that name, as a Go method
    under its receiver's type wherever the type is declared), children in file order, each with its
    depth; a definition whose parent is not in the file is at the top level."""
    ordered = sorted(symbols, key=lambda s: (s.start_line, -s.end_line, s.position))
    by_name: dict[str, list[int]] = {}
    for i, symbol in enumerate(ordered):
        by_name.setdefault(symbol.qualified_name, []).append(i)
    parent_of: dict[int, int] = {}
    for i, symbol in enumerate(ordered):
        candidates = [j for j in by_name.get(symbol.parent or "", ()) if j != i]
        if not candidates:
            continue
        holding = [j for j in candidates if _holds(ordered[j], symbol)]
        parent_of[i] = holding[-1] if holding else candidates[0]
    children: dict[int | None, list[int]] = {}
    for i in range(len(ordered)):
        children.setdefault(parent_of.get(i), []).append(i)
    out: list[OutlineEntry] = []
    seen: set[int] = set()
    for root in [*children.get(None, []), *range(len(ordered))]:  # then any cycle's, at the top
        if root in seen:
            continue
        stack = [(root, 0)]
        while stack:  # depth first, without recursion (a file can nest thousands deep)
            i, depth = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            out.append(OutlineEntry(ordered[i], depth))
            stack.extend((c, depth + 1) for c in reversed(children.get(i, [])))
    return out


def _holds(outer: Symbol, inner: Symbol) -> bool:
    return outer.start_line <= inner.start_line and inner.end_line <= outer.end_line


def outline_tree(entries: Sequence[OutlineEntry]) -> list[dict[str, Any]]:
    """The outline as nested dicts (``children``), for JSON answers."""
    roots: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    for entry in entries:
        node = {**entry.symbol.to_dict(), "children": []}
        while stack and stack[-1][0] >= entry.depth:
            stack.pop()
        (stack[-1][1]["children"] if stack else roots).append(node)
        stack.append((entry.depth, node))
    return roots
