"""A call's receiver typed from the declarations the parse gives (Java, TypeScript, C++), for
``references.py``: the rules that took the reference precision of RESULTS.md#brace-edges-by-hand
from .872/.867/.816 (C++, Java, TypeScript) towards .9 (RESULTS.md#reference-precision-again).

The parse stores each declared name with its written type (``code/bindings.py``: locals,
parameters, fields, ``new Foo()`` initialisers, destructured names). For a call in one of these
languages:

* ``x.bar()`` where ``x`` is declared in scope (the innermost enclosing declaration first, a
  field of the enclosing class, ``this.x``/``this->x``): ``Foo x`` gives ``bar`` of ``Foo`` or of
  its bases (the base classes and interfaces its header names, transitively); a type with no
  definition in the index (``ByteBuffer``, ``Subscription`` outside the folder, a C++ template
  parameter ``Handler``) gives none: unresolved, the method is outside the index; ``Foo`` defined
  without ``bar`` in it or its bases: unresolved (inherited from outside);
* ``this.bar()`` / ``this->bar()``: the enclosing class and its bases, else unresolved;
* a Java call with no receiver (an implicit ``this``): the enclosing classes and their bases, a
  static import, else unresolved (``getClass()`` is ``Object``'s);
* a TypeScript or C++ call of a name declared in scope as a variable or parameter (``const {
  connector } = config; connector()``): unresolved, it runs a value, not a definition;
* ``super.bar()``: the bases' ``bar``, never the overriding method calling it;
* C++ ``::close(fd)``: a function of the global namespace, never a member of that name;
* C++ ``std::begin(s)``: the standard library's (the repository's own overloads in ``namespace
  std`` are kept as candidates: the argument types choose);
* C and C++: a call named in capitals (``JSON_ASSERT(x)``) is a macro: a ``#define`` of the
  index or nothing (a misparsed definition of that name is no target); a keyword (``noexcept``)
  is never a call;
* a receiver whose type nothing gives (``Runtime.getRuntime().x()``, ``const s = f(); s.x()``,
  a Java field inherited from a class outside the index): ambiguous, every candidate kept,
  never matched by name to one of them.

Anything else (a class or namespace qualifier, a module, a bare function) is left to
``references.py``'s rules (return None).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hybrid_rag.code.bindings import BINDING, PLACEHOLDER_TYPES
from hybrid_rag.symbols.aliases import MAX_STEPS, aliased, pointee
from hybrid_rag.symbols.model import Reference, Symbol
from hybrid_rag.symbols.receivers import STD_ROOTS
from hybrid_rag.symbols.search import split_qualified

# ``c``: a ``.h`` file is stored as C and parsed by the C++ grammar when that reads it better
TYPED = frozenset({"java", "typescript", "tsx", "cpp", "c"})
OVERLOADED = frozenset({"java", "cpp", "c"})  # several definitions of one name in a class: overloads
# or ``#if`` alternatives, chosen by argument types or the build
_TYPE_KINDS = frozenset({"class", "struct", "interface", "enum", "union", "object"})
_SCOPES = _TYPE_KINDS | {"type", "namespace", "module", "trait", "impl"}  # what ``X::`` / ``X.`` may name
_BASE_KINDS = ("class", "implementation", "type")  # Java's ``extends Parser<T>`` is a type use
_THIS = ("this", "self", "Self")
_THIS_MEMBER = re.compile(r"^(?:this|self)\s*(?:\.|->)\s*([A-Za-z_$][\w$]*)$")
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_C_TYPE = re.compile(  # ``a::b``, ``cache_accessor<T>``: a scope or a type, not a receiver
    r"^(?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*\s*<.*>$|^(?:[A-Za-z_]\w*\s*::\s*)+[A-Za-z_]\w*$"
)
_WORDS_DROPPED = re.compile(r"\b(?:const|volatile|typename|struct|class|enum|readonly|final|mutable)\b")
_NO_TYPE = frozenset({"any", "unknown", "object", "Object", "never"})  # says nothing of the receiver
MAX_BASES = 32
_MACRO = re.compile(r"^[A-Z][A-Z0-9_]*_[A-Z0-9_]*$|^[A-Z][A-Z0-9]{3,}$")  # FMT_THROW, ASSERT: not Foo, X
_C_KEYWORDS = frozenset(
    [
        "noexcept",
        "decltype",
        "sizeof",
        "alignof",
        "alignas",
        "static_assert",
        "typeid",
        "requires",
        "defined",
        "co_await",
    ]
)
UNKNOWN = "receiver of unknown type"  # the candidates are kept, ambiguous, even when one

# (candidates kept, via, why none); None: references.py's rules decide
Narrowed = tuple[list[Symbol], str, str] | None
Definitions = Callable[[Iterable[str]], dict[str, list[Symbol]]]


def type_name(written: str) -> str:
    """The class a written type names (``const detail::buffer<T>&`` -> ``buffer``,
    ``Subscriber<T> | null`` -> ``Subscriber``, ``Foo[]`` -> ``Array``); "" when it names none
    (a placeholder, ``any``, a union of two types, a function type).

    >>> type_name("const detail::buffer<T>&"), type_name("Subscription | null"), type_name("int[]")
    ('buffer', 'Subscription', 'Array')
    >>> type_name("auto"), type_name("A | B"), type_name("(x: number) => void")
    ('', '', '')
    """
    text = " ".join(written.split())
    if not text or text in PLACEHOLDER_TYPES or "=>" in text or text.startswith(("(", "{")):
        return ""
    parts = {p.strip() for p in text.split("|")} - {"null", "undefined", "void", ""}
    if len(parts) != 1:
        return ""
    text = _WORDS_DROPPED.sub(" ", parts.pop()).strip(" &*?")
    if text.endswith("[]"):
        return "Array"
    depth, head = 0, []
    for ch in text:  # the part outside template arguments
        depth += ch == "<"
        if depth == 0:
            head.append(ch)
        depth -= ch == ">"
    base = "".join(head).replace("->", ".").strip(" &*")
    last = split_qualified(base.replace("::", "."))[-1] if base else ""
    last = last.strip()
    return last if _IDENT.match(last) and last not in _NO_TYPE else ""


class Receivers:
    """The declarations and type bases of a store state, read once per document."""

    def __init__(self, source: Any, state: int | None, definitions: Definitions) -> None:
        self.source = source
        self.state = state
        self.definitions = definitions
        self._bindings: dict[int, list[Reference]] = {}
        self._symbols: dict[int, dict[int, Symbol]] = {}  # document -> position -> symbol
        self._bases: dict[int, list[str]] = {}  # type symbol id -> the base names its header names

    def load(self, refs: Sequence[Reference]) -> None:
        docs = sorted({r.document_id for r in refs if r.language in TYPED} - set(self._bindings))
        if not docs:
            return
        found: dict[int, list[Reference]] = {d: [] for d in docs}
        for ref in self.source.references(document_ids=docs, kinds=[BINDING], state=self.state):
            found[ref.document_id].append(ref)
        self._bindings.update(found)
        positions: dict[int, dict[int, Symbol]] = {d: {} for d in docs}  # one read for them all
        for symbol in self.source.symbols_of(docs):
            if symbol.document_id in positions:
                positions[symbol.document_id][symbol.position] = symbol
        self._symbols.update(positions)

    def prefetch(self, refs: Sequence[Reference]) -> None:
        """The definitions of the receivers' declared types, read in one query for the answer
        (one by one they cost a query each: RESULTS.md#reference-precision-again)."""
        names = set()
        for ref in refs:
            if ref.language not in TYPED or ref.kind != "call" or ref.document_id not in self._bindings:
                continue
            qualifier = " ".join(ref.qualifier.split())
            field = _THIS_MEMBER.match(qualifier)
            receiver = field.group(1) if field else qualifier if _IDENT.match(qualifier) else ""
            declared = self.binding(ref, receiver, fields_only=bool(field)) if receiver else None
            if declared is not None and type_name(declared.module):
                names.add(type_name(declared.module))
        if names:
            self.definitions(names)

    def _positions(self, document_id: int) -> dict[int, Symbol]:
        if document_id not in self._symbols:
            symbols = self.source.symbols_of([document_id])
            self._symbols[document_id] = {s.position: s for s in symbols if s.document_id == document_id}
        return self._symbols[document_id]

    def binding(self, ref: Reference, name: str, *, fields_only: bool = False) -> Reference | None:
        """The declaration of ``name`` visible at ``ref``: the innermost enclosing declaration
        (file level last) that declares it, the nearest one before the use within it."""
        found = [b for b in self._bindings.get(ref.document_id, ()) if b.name == name]
        if not found:
            return None
        positions = self._positions(ref.document_id)
        best: tuple[int, int, Reference] | None = None
        for b in found:
            holder = positions.get(b.scope) if b.scope is not None else None
            if holder is None:
                span = 1 << 30  # file level: visible everywhere, after every narrower one
            elif holder.start_line <= ref.line <= holder.end_line:
                span = holder.end_line - holder.start_line
            else:
                continue
            if fields_only and (holder is None or holder.kind not in _TYPE_KINDS):
                continue
            local = holder is not None and holder.kind not in _TYPE_KINDS
            if local and b.line > ref.line:
                continue  # a local declared after the use is not this one (a field, a module's may be)
            key = (span, -b.line)
            if best is None or key < best[:2]:
                best = (*key, b)
        return best[2] if best else None

    def owners(self, scope: Symbol | None) -> list[Symbol]:
        """The classes enclosing ``scope``, innermost first (same file)."""
        if scope is None:
            return []
        by_name = {s.qualified_name: s for s in self._positions(scope.document_id).values()}
        out, name = [], scope.qualified_name if scope.kind in _TYPE_KINDS else scope.parent
        while name and len(out) < MAX_BASES:
            s = by_name.get(name)
            if s is None:
                break
            if s.kind in _TYPE_KINDS:
                out.append(s)
            name = s.parent
        return out

    def family(self, types: Sequence[Symbol]) -> tuple[set[str], bool]:
        """The names of ``types`` and their bases, transitively; and whether every base named is
        in the index (False: a member may come from a class outside it)."""
        names: set[str] = set()
        complete = True
        todo = list(types)
        seen: set[int] = set()
        while todo and len(seen) < MAX_BASES:
            t = todo.pop()
            if t.id in seen:
                continue
            seen.add(t.id)
            names.add(t.name)
            for base in self._bases_of(t):
                defined = [s for s in self.definitions([base]).get(base, ()) if s.kind in _TYPE_KINDS]
                if not defined:
                    complete = False
                todo.extend(defined)
        return names, complete

    def _bases_of(self, t: Symbol) -> list[str]:
        if t.id not in self._bases:
            refs = self.source.references(
                document_ids=[t.document_id], kinds=list(_BASE_KINDS), state=self.state
            )
            self._bases[t.id] = [
                r.name
                for r in refs
                if r.scope == t.position
                and r.name != t.name
                and re.search(rf"\b{re.escape(r.name)}\b", t.signature)
            ]
        return self._bases[t.id]

    def narrow(
        self, ref: Reference, scope: Symbol | None, candidates: list[Symbol], imports: Sequence[Reference]
    ) -> Narrowed:
        """The module docstring's rules for one call (``candidates``: the definitions its name
        and kind allow; ``imports``: the file's imports)."""
        if ref.language not in TYPED or ref.kind != "call":
            return None
        qualifier = " ".join(ref.qualifier.split())
        if ref.language in ("c", "cpp"):
            if qualifier.split("::")[0].strip() in STD_ROOTS:  # ``std::begin(s)``: the library's
                mine = [s for s in candidates if split_qualified(s.qualified_name)[0] in STD_ROOTS]
                if mine:  # the repository's overload for its own type: one candidate among the library's
                    return mine, UNKNOWN, ""
                return [], "", "the standard library"
            if qualifier == "::":  # ``::close(fd)``: a function of the global namespace
                free = [s for s in candidates if not s.parent and "::" not in s.qualified_name]
                return (free, "global", "") if free else ([], "", "a global function outside the index")
            if ref.name in _C_KEYWORDS:  # ``noexcept(...)``: a misparse made it a definition
                return [], "", "a keyword"
            if _MACRO.match(ref.name):  # ``JSON_ASSERT(x)``: a macro, never a function's misparse
                macros = [s for s in candidates if s.kind == "macro"]
                return (macros, "macro", "") if macros else ([], "", "a macro not defined in the index")
        java = ref.language == "java"
        if not qualifier:
            if not java:
                if self.binding(ref, ref.name) is not None:
                    return [], "", "a variable or parameter of the scope, not a definition"
                return None
            found = self._members(self.owners(scope), candidates, "enclosing class", implicit=True)
            if found is None and not any(i.name == ref.name for i in imports):
                return [], "", "not in the enclosing classes or their bases (inherited from outside)"
            return found
        if qualifier in _THIS:
            return self._members(self.owners(scope), candidates, "self")
        if qualifier == "super":  # the bases' member, never the overriding one calling it
            return self._members(self.owners(scope)[:1], candidates, "super", bases_only=True)
        field = _THIS_MEMBER.match(qualifier)
        if field:
            declared = self.binding(ref, field.group(1), fields_only=True)
            if declared is None:
                return self._unknown(candidates)
            return self._typed(declared, candidates, scope, ref.name)
        if _IDENT.match(qualifier):
            declared = self.binding(ref, qualifier)
            if declared is not None:
                return self._typed(declared, candidates, scope, ref.name)
            if self._is_type(qualifier) or ref.language in ("typescript", "tsx"):
                return None  # ``Foo.bar()``, an import: references.py's qualifier rules
            if not java:  # C, C++: ``ns::f()`` and ``x.f()`` store the same qualifier
                if (
                    qualifier in STD_ROOTS
                    or all(not s.parent for s in candidates)
                    or any(qualifier in split_qualified(s.qualified_name)[:-1] for s in candidates)
                ):
                    return None  # a namespace's function (``detail::split()``), a class's static
                return self._unknown(candidates)  # a variable whose declaration was not read
            if qualifier[:1].isupper():
                return [], "", f"a member of {qualifier}, outside the index"
            return self._unknown(candidates)  # a field inherited from outside, a package name
        if ref.language in ("cpp", "c") and _C_TYPE.match(qualifier):
            return None  # ``detail::f()``, ``cache_accessor<T>::f()``: a scope, not a receiver
        return self._unknown(candidates)  # an expression: its type is not read

    def _is_type(self, name: str) -> bool:
        return any(s.kind in _SCOPES for s in self.definitions([name]).get(name, ()))

    def _typed(
        self, declared: Reference, candidates: list[Symbol], scope: Symbol | None, called: str = ""
    ) -> Narrowed:
        types, defined, name, via = self.types_of(declared.module, called)
        if not name:
            return self._unknown(candidates)
        if not types:
            if defined:  # an alias whose type is not read (a function type, two readings)
                return self._unknown(candidates)
            if self._type_parameter(name, scope):  # any type: the candidates kept, none picked
                return self._unknown(candidates)
            if declared.language in ("c", "cpp") and "std::" not in declared.module:
                return self._unknown(candidates)  # maybe an alias (``using Option_p = ...``)
            return [], "", f"a receiver of type {name}, outside the index"
        return self._members(types, candidates, via)

    def types_of(self, written: str, called: str = "") -> tuple[list[Symbol], list[Symbol], str, str]:
        """(the type definitions a written type names, every definition of its name, the name,
        the rule) through aliases and smart pointers (``aliases.py``); no name when none is
        read."""
        via = "receiver type"
        for _ in range(MAX_STEPS):
            inner = pointee(written, called)
            if inner is None:  # ``p.reset()`` on a ``std::unique_ptr``: the pointer's own
                return [], [], "", via
            name = type_name(inner)
            if not name:
                return [], [], "", via
            defined = self.definitions([name]).get(name, [])
            types = [s for s in defined if s.kind in _TYPE_KINDS]
            named = {aliased(s.signature) if s.kind == "type" else "" for s in defined}
            if types or len(named) != 1 or "" in named:  # a type, nothing, or not one alias's reading
                return types, defined, name, via
            written, via = named.pop(), "receiver type through an alias"
        return [], [], "", via

    def _type_parameter(self, name: str, scope: Symbol | None) -> bool:
        """``name`` is a template or generic parameter of the enclosing definitions
        (``template <typename BasicJsonType>``, ``class Parser<T>``): any type, maybe one of the
        index's."""
        holders = ([scope] if scope is not None else []) + self.owners(scope)
        word = re.escape(name)
        pattern = re.compile(rf"(?:\btypename|\bclass|<|,)\s*{word}\s*(?:extends\b|[,>=]|$)")
        return any(pattern.search(s.signature.split("(", 1)[0]) for s in holders)

    def _members(
        self,
        types: Sequence[Symbol],
        candidates: list[Symbol],
        via: str,
        *,
        implicit: bool = False,
        bases_only: bool = False,
    ) -> Narrowed:
        if not types:
            return None if implicit else self._unknown(candidates)
        names, complete = self.family(types)
        if bases_only:
            names -= {t.name for t in types}
        kept = [s for s in candidates if s.parent and split_qualified(s.parent)[-1] in names]
        if kept:
            return kept, via, ""
        if implicit:
            return None  # a static import, an outer scope's function: references.py's rules
        if any(s.language in ("c", "cpp") and not s.parent for s in candidates):
            return self._unknown(candidates)  # a class behind a macro: its methods have no parent
        where = "its bases outside the index" if not complete else "no such member in the index"
        return [], "", f"not a member of {types[0].name} ({where})"

    def _unknown(self, candidates: list[Symbol]) -> Narrowed:
        """Every candidate kept, none picked; in C and C++ functions too (a method of a class the
        parse did not see as one, behind a macro, has no parent)."""
        c_family = any(s.language in ("c", "cpp") for s in candidates)
        methods = [s for s in candidates if s.parent or c_family]
        if not methods:
            return [], "", "a receiver of unknown type"
        return methods, UNKNOWN, ""
