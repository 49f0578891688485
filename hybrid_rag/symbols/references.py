"""References resolved to definitions (the questions over them are ``questions.py``).

The store keeps each use of a name (``code_references``: a call, a type or base class named, an
import) with its file, line, qualifier and the definition holding it; nothing is resolved at
ingest, so an edit to a callee's file never leaves an inbound edge pointing at old lines. A use is
resolved when it is asked for, against the definitions of the same store state, in this order:

1. **qualifier**: ``self.take()`` / ``this.take()`` to the enclosing class's ``take``; ``Foo.bar()``
   or ``Foo::new()`` to ``bar`` / ``new`` of a definition named ``Foo``; ``mod.f()`` where the
   file imports ``mod`` to ``f`` in that module's files (an imported module with no such
   definition in the index: unresolved, it is outside the repository);
2. **same file**: a definition of the name in the use's own file;
3. **imports**: the file imports the name (``from a.b import f``, ``import {f} from './a'``, ``use
   crate::a::F``, ``import com.x.F``): the definitions in the module's files (an import from
   outside the repository: unresolved);
4. **unique name**: the one definition of the name in the repository.

Otherwise the use is **ambiguous** and keeps every candidate: answers list it apart, never
picked silently. Kinds must fit: a call resolves to a function, method, class, struct, macro ...;
a type or base class to a class, struct, interface, trait, enum, type.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hybrid_rag.code.bindings import BINDING
from hybrid_rag.code.preproc import ALTERNATIVE
from hybrid_rag.paths import display_path
from hybrid_rag.symbols.bindings import OVERLOADED, UNKNOWN, Receivers
from hybrid_rag.symbols.members import is_member
from hybrid_rag.symbols.model import Reference, Symbol
from hybrid_rag.symbols.overloads import Overloads, by_argument_types
from hybrid_rag.symbols.receivers import narrow
from hybrid_rag.symbols.search import split_qualified

RESOLVED, AMBIGUOUS, UNRESOLVED = "resolved", "ambiguous", "unresolved"
CALLS = ("call", "class")  # uses that run the definition: a call, ``new Foo()``, ``Foo::new()``
_CALLABLE = frozenset({"function", "method", "class", "struct", "macro", "object", "enum", "constant"})
_TYPES = frozenset({"class", "struct", "interface", "trait", "enum", "union", "type", "object"})
_FITS = {
    "name": _CALLABLE | _TYPES,
    "call": _CALLABLE,
    "class": _TYPES | _CALLABLE,
    "type": _TYPES,
    "implementation": _TYPES,
    "interface": _TYPES,
}
_RECEIVER_NEEDED = frozenset({"python", "rust", "go", "javascript", "typescript"})  # no implicit this
_ROUTINES = frozenset({"function", "method"})
_SELF = frozenset({"self", "this", "Self", "cls", "@", "$this", "super"})
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_SOURCE_EXT = re.compile(r"\.[A-Za-z0-9+]+$")
_INDEX_STEMS = ("/__init__", "/index", "/mod", "/lib")
MAX_DEPTH = 5
Show = Callable[[str], str]  # a stored path as answers show it


def _same(path: str) -> str:
    return path


def _shower(root: str | None) -> Show:
    """Paths relative to the ingested ``root`` (stored paths when None)."""
    return (lambda path: display_path(path, root)) if root else _same


class ReferenceSource(Protocol):
    """What resolution reads: ``MetadataStore``'s reference and symbol methods."""

    def references(self, **kwargs: Any) -> list[Reference]: ...

    def symbols(self, **kwargs: Any) -> list[Symbol]: ...

    def symbols_of(self, document_ids: Iterable[int], **kwargs: Any) -> list[Symbol]: ...

    def symbol_names(self, **kwargs: Any) -> list[str]: ...


@dataclass(frozen=True)
class Use:
    """One reference with what it resolved to: one definition (``resolved``, ``via`` says which
    rule), its candidates (``ambiguous``), or none in the index (``unresolved``). ``scope``: the
    definition holding the use (None at a file's top level)."""

    reference: Reference
    scope: Symbol | None
    status: str
    via: str
    targets: tuple[Symbol, ...] = ()

    @property
    def citation(self) -> str:
        return self.reference.citation

    def to_dict(self, show: Show = _same, *, scope: bool = True) -> dict[str, Any]:
        r = self.reference
        path = show(r.path)
        out: dict[str, Any] = {
            "name": r.name,
            "kind": r.kind,
            "path": path,
            "line": r.line,
            "citation": f"{path}:{r.line}-{r.line}",
            "qualifier": r.qualifier,
            "status": self.status,
            "via": self.via,
        }
        if scope:
            out["scope"] = _brief(self.scope, show) if self.scope else None
        key = "definition" if self.status == RESOLVED else "candidates"
        if self.status == RESOLVED:
            out[key] = _brief(self.targets[0], show)
        elif self.targets:
            out[key] = [_brief(t, show) for t in self.targets]
        return out


def _brief(symbol: Symbol, show: Show = _same) -> dict[str, Any]:
    path = show(symbol.path)
    return {
        "qualified_name": symbol.qualified_name,
        "kind": symbol.kind,
        "path": path,
        "start_line": symbol.start_line,
        "end_line": symbol.end_line,
        "citation": f"{path}:{symbol.start_line}-{symbol.end_line}",
        "signature": symbol.signature,
    }


class Resolver:
    """Resolves uses against one store state, caching what it reads (definitions by name, the
    definitions holding uses, a document's imports, which definitions are functions): for one
    answer, or for every answer at that state (``state_cache.py``: a state's rows never change).
    What it reads is filled in whole before it is stored, so threads may share it."""

    def __init__(self, source: ReferenceSource, state: int | None) -> None:
        self.source = source
        self.state = state
        self._by_name: dict[str, list[Symbol]] = {}
        self._scopes: dict[tuple[int, int], Symbol] = {}
        self._imports: dict[int, list[Reference]] = {}
        self._functions: dict[tuple[int, str], bool] = {}  # (document, qualified name) -> a function
        self.receivers = Receivers(source, state, self.definitions)  # bindings.py: typed receivers
        self.overloads = Overloads(source, state)  # overloads.py: #if copies, argument counts

    def definitions(self, names: Iterable[str]) -> dict[str, list[Symbol]]:
        missing = sorted({n for n in names if n not in self._by_name})
        if missing:
            found: dict[str, list[Symbol]] = {n: [] for n in missing}
            for symbol in self.source.symbols(names=missing, state=self.state):
                if symbol.name in found and not is_member(symbol):  # symbols/members.py
                    found[symbol.name].append(symbol)
            self._by_name.update(found)
        return self._by_name

    def _load(self, refs: Sequence[Reference]) -> None:
        """The imports of the uses' documents and the definitions holding the uses."""
        docs = sorted({r.document_id for r in refs} - set(self._imports))
        if docs:
            imports: dict[int, list[Reference]] = {d: [] for d in docs}
            for ref in self.source.references(document_ids=docs, kinds=["import"], state=self.state):
                imports[ref.document_id].append(ref)
            self._imports.update(imports)
        pairs = {(r.document_id, r.scope) for r in refs if r.scope is not None} - set(self._scopes)
        if pairs:
            found = self.source.symbols_of({d for d, _ in pairs}, positions={p for _, p in pairs})
            for symbol in found:
                if (symbol.document_id, symbol.position) in pairs:
                    self._scopes[(symbol.document_id, symbol.position)] = symbol

    def scope_of(self, ref: Reference) -> Symbol | None:
        if ref.scope is None:
            return None
        if (ref.document_id, ref.scope) not in self._scopes:
            self._load([ref])
        return self._scopes.get((ref.document_id, ref.scope))

    def resolve(self, refs: Sequence[Reference]) -> list[Use]:
        """Each reference resolved (module docstring), in the given order."""
        self._load(refs)
        self.receivers.load(refs)
        wanted = {r.name for r in refs} | {_last(r.qualifier) for r in refs if _last(r.qualifier)}
        self.definitions(wanted)
        self.receivers.prefetch(refs)
        return [self._one(r) for r in refs]

    def _one(self, ref: Reference) -> Use:
        scope = self.scope_of(ref)
        fits = _FITS.get(ref.kind)
        family = _family(ref.language)
        candidates = [
            s
            for s in self._by_name.get(ref.name, ())
            if (fits is None or s.kind in fits) and _family(s.language) == family
        ]
        if not ref.qualifier and ref.language in _RECEIVER_NEEDED:  # a bare name is never a method there
            candidates = [s for s in candidates if s.kind != "method"]
        candidates = self._visible(_without_stubs(candidates), ref, scope)
        if not candidates:
            return Use(ref, scope, UNRESOLVED, "no definition")
        if (
            ref.kind == "name"
            and scope is not None
            and re.search(rf"\b{re.escape(ref.name)}\b", scope.signature)
        ):
            return Use(ref, scope, UNRESOLVED, "a parameter")  # a value passed on, not the definition
        if ref.kind in (BINDING, ALTERNATIVE):
            return Use(ref, scope, UNRESOLVED, "a declaration")  # code/bindings.py: no use
        if ref.kind == "import":
            return self._imported(ref, scope, candidates, ref.module) or Use(
                ref, scope, UNRESOLVED, "outside the index"
            )
        narrowed = self.receivers.narrow(ref, scope, candidates, self._imports.get(ref.document_id, ()))
        if narrowed is not None:  # Java, TypeScript, C++: the receiver's declared type
            kept, via, why = narrowed
            if not kept:
                return Use(ref, scope, UNRESOLVED, why)
            return (
                Use(ref, scope, AMBIGUOUS, via, tuple(kept))
                if via == UNKNOWN
                else self._pick(ref, scope, kept, via)
            )
        qualifier = ref.qualifier.strip()
        if qualifier:
            found = self._by_qualifier(ref, scope, candidates, qualifier)
            if found is not None:
                return found
            if qualifier not in _SELF and not qualifier.startswith("@"):  # receivers.py
                candidates, why = narrow(
                    ref.language, ref.name, qualifier, candidates, lambda m, s: module_holds(m, ref.path, s)
                )
                if not candidates:
                    return Use(ref, scope, UNRESOLVED, why)
        same = [s for s in candidates if s.document_id == ref.document_id]
        adl = by_argument_types(ref, candidates, self._argument_types)  # C++: overloads.py
        if adl:  # picked only when ordinary lookup finds no other
            if not same or all(s in adl for s in same):
                return self._pick(ref, scope, adl, "argument-dependent lookup")
            both = same + [s for s in adl if s not in same]
            return Use(ref, scope, AMBIGUOUS, "argument-dependent lookup", tuple(both))
        if same and (not qualifier or qualifier in _SELF or len(same) == 1):
            return self._pick(ref, scope, same, "same file")
        if not qualifier:
            for imp in self._imports.get(ref.document_id, ()):
                if imp.name == ref.name:
                    return self._imported(ref, scope, candidates, imp.module) or Use(
                        ref, scope, UNRESOLVED, "imported from outside the index"
                    )
        return self._pick(ref, scope, candidates, "unique name")

    def _pick(self, ref: Reference, scope: Symbol | None, found: Sequence[Symbol], via: str) -> Use:
        if ref.kind == "call" and ref.language in OVERLOADED and len(found) > 1:
            found, via = self.overloads.narrow(ref, found, via)
        return _pick(ref, scope, found, via)

    def _argument_types(self, ref: Reference, name: str) -> list[Symbol]:
        declared = self.receivers.binding(ref, name)
        return self.receivers.types_of(declared.module)[0] if declared is not None else []

    def _visible(self, candidates: list[Symbol], ref: Reference, scope: Symbol | None) -> list[Symbol]:
        """The candidates a use can name: a definition nested in a function (a test's local
        ``def cli()``) only from inside that function."""
        nested = [s for s in candidates if s.parent and s.kind != "method"]
        if not nested:
            return candidates
        missing = [s for s in nested if (s.document_id, s.parent or "") not in self._functions]
        if missing:
            functions = {(s.document_id, s.parent or ""): False for s in missing}
            names = {s.parent or "" for s in missing}
            for parent in self.source.symbols_of({s.document_id for s in missing}, qualified_names=names):
                if parent.kind in {"function", "method"}:
                    functions[(parent.document_id, parent.qualified_name)] = True
            self._functions.update(functions)
        inside = split_qualified(scope.qualified_name) if scope is not None else []
        out = []
        for s in candidates:
            if s in nested and self._in_function(s):
                own = split_qualified(s.parent or "")
                if s.document_id != ref.document_id or inside[: len(own)] != own:
                    continue
            out.append(s)
        return out

    def _in_function(self, symbol: Symbol) -> bool:
        return self._functions.get((symbol.document_id, symbol.parent or ""), False)

    def _by_qualifier(
        self, ref: Reference, scope: Symbol | None, candidates: list[Symbol], qualifier: str
    ) -> Use | None:
        if qualifier in _SELF or qualifier.startswith("@"):  # a member of the enclosing type
            owner = self._owner(scope)
            if owner is not None:
                mine = [s for s in candidates if s.document_id == ref.document_id and s.parent == owner]
                if mine:
                    return self._pick(ref, scope, mine, "self")
            return None
        head = _last(qualifier)
        if not head:
            return None
        for imp in self._imports.get(ref.document_id, ()):  # ``mod.f()``: the file imports mod
            if imp.name == head or imp.module == qualifier:
                module = imp.module if imp.module.endswith(imp.name) else f"{imp.module}.{imp.name}"
                found = self._imported(ref, scope, candidates, module) or self._imported(
                    ref, scope, candidates, imp.module
                )
                return found or Use(ref, scope, UNRESOLVED, f"member of {head}, outside the index")
        members = [s for s in candidates if s.parent and split_qualified(s.parent)[-1] == head]
        if members:  # ``Foo.bar()`` / ``Foo::new()``: bar of a definition named Foo
            return self._pick(ref, scope, members, "qualifier")
        return None

    def _owner(self, scope: Symbol | None) -> str | None:
        """The qualified name of the type enclosing ``scope`` (a method's class)."""
        if scope is None:
            return None
        if scope.kind in _TYPES or scope.kind == "impl":
            return scope.qualified_name
        return scope.parent

    def _imported(
        self, ref: Reference, scope: Symbol | None, candidates: list[Symbol], module: str
    ) -> Use | None:
        scored = [(module_holds(module, ref.path, s), s) for s in candidates]
        best = max((n for n, _ in scored), default=0)
        matched = [s for n, s in scored if n and n == best]
        return self._pick(ref, scope, matched, "import") if matched else None


def _without_stubs(candidates: list[Symbol]) -> list[Symbol]:
    """The candidates without the stubs (``.pyi``, ``.d.ts``) of a definition whose source is
    among them: ``more.pyi``'s ``windowed`` is ``more.py``'s, not a second candidate."""
    stubs = [s for s in candidates if s.path.endswith(_STUBS)]
    if not stubs:
        return candidates
    sources = {(_stem(s.path), s.qualified_name) for s in candidates if not s.path.endswith(_STUBS)}
    return [
        s
        for s in candidates
        if not (s.path.endswith(_STUBS) and (_stem(s.path), s.qualified_name) in sources)
    ]


_STUBS = (".pyi", ".d.ts")


def _stem(path: str) -> str:
    return path.removesuffix(".d.ts").rsplit(".", 1)[0]


def _family(language: str) -> str:
    """Languages whose files call each other's definitions (a JavaScript call never runs Java)."""
    return _FAMILIES.get(language, language)


_FAMILIES = {"typescript": "javascript", "cpp": "c"}


def _pick(ref: Reference, scope: Symbol | None, found: Sequence[Symbol], via: str) -> Use:
    """Resolved when the candidates are one definition (a Python property's getter and setter,
    TypeScript's overload signatures in one file: the first), else ambiguous with all of them
    (Java and C++ overloads too: the argument types choose, which the index does not read)."""
    distinct: set[tuple[int, str | int]] = {(s.document_id, s.qualified_name) for s in found}
    if ref.kind == "call" and ref.language in OVERLOADED and all(s.kind in _ROUTINES for s in found):
        # overloads: the argument types choose
        distinct = {(s.document_id, s.start_line) for s in found}
    if len(distinct) == 1:
        return Use(ref, scope, RESOLVED, via, (found[0],))
    return Use(ref, scope, AMBIGUOUS, via, tuple(found))


def _last(qualifier: str) -> str:
    """The last identifier of a qualifier (``Foo`` of ``crate::db::Foo``), "" for an expression."""
    text = qualifier.strip()
    parts = split_qualified(text) if text else []
    head = parts[-1] if parts else ""
    return head if _IDENT.match(head) else ""


def module_holds(module: str, from_path: str, symbol: Symbol) -> int:
    """How well the module an import names (``a.b``, ``.b``, ``./b``, ``crate::a::b``,
    ``com.x.Foo``, ``example.com/x/pkg``) is the definition's file or holds it (its folder, a
    Java qualified name): the number of the module's trailing parts the file's path ends with
    (a relative module, a qualified name: 100), 0 when it does not.

    >>> s = Symbol(1, 1, None, "/r/src/pkg/db.py", "python", 0, "f", "function", "f", "", 1, 2)
    >>> module_holds("pkg.db", "/r/src/app.py", s), module_holds(".db", "/r/src/pkg/x.py", s)
    (2, 100)
    >>> module_holds("other.db2", "/r/src/app.py", s)
    0
    """
    text = module.strip().strip("\"'")
    if not text:
        return 0
    stem = _SOURCE_EXT.sub("", symbol.path)
    for index in _INDEX_STEMS:
        if stem.endswith(index):
            stem = stem[: -len(index)]
            break
    folder = posixpath.dirname(symbol.path)
    if text.startswith("."):
        if "/" in text:  # ./pool, ../db/pool (JavaScript, TypeScript)
            base = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), _SOURCE_EXT.sub("", text)))
        else:  # Python: .pool, ..db.pool
            dots = len(text) - len(text.lstrip("."))
            base = posixpath.dirname(from_path)
            for _ in range(dots - 1):
                base = posixpath.dirname(base)
            rest = text[dots:].replace(".", "/")
            base = posixpath.join(base, rest) if rest else base
        return 100 if stem == base or folder == base else 0
    if symbol.qualified_name == text or text.endswith("." + symbol.qualified_name):
        return 100  # Java: import com.x.Foo
    parts = [p for p in re.split(r"::|/|\.|\\", text) if p and p not in {"crate", "self", "super", "@"}]
    for n in range(len(parts), 0, -1):  # the longest tail of the module the path ends with
        for end in (len(parts), len(parts) - 1):  # the module, or (Java, Rust) all but a name in it
            tail = parts[max(end - n, 0) : end]
            suffix = "/" + "/".join(tail)
            if tail and (stem.endswith(suffix) or folder.endswith(suffix)):
                return len(tail)
    return 0
