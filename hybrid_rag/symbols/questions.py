"""The questions over resolved references (``references.py``): every use of a name, its callers,
its callees, and what depends on a file or a definition, as objects and as the JSON answers every
surface gives (``Engine.references``; the CLI renders its text from the JSON, ``render.py``).

* ``uses_of``: the uses resolved to the definitions a name names, and the ambiguous ones whose
  candidates include one; with no definition in the index, the unresolved uses of the name.
* ``callers``: those uses that run the definition (a call, ``new``), grouped by the definition
  holding them; ``depth`` > 1 follows resolved calls up.
* ``callees``: the calls inside a definition's lines, resolved; ``depth`` > 1 follows them down.
* ``impact``: every use (call, type, base class, import) of the targets, grouped by the holding
  definition, ``depth`` levels up, scored 1 (1/candidates when ambiguous) over the depth, and the
  files summed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hybrid_rag.errors import InputError
from hybrid_rag.symbols import state_cache as cached
from hybrid_rag.symbols.model import Symbol
from hybrid_rag.symbols.references import (
    AMBIGUOUS,
    CALLS,
    MAX_DEPTH,
    RESOLVED,
    UNRESOLVED,
    ReferenceSource,
    Show,
    Use,
    _brief,
    _same,
    _shower,
)
from hybrid_rag.symbols.search import find, split_qualified


@dataclass(frozen=True)
class Caller:
    """A definition (None: a file's top level) that uses the target, with the lines it does."""

    symbol: Symbol | None
    path: str
    uses: tuple[Use, ...]
    depth: int = 1

    @property
    def ambiguous(self) -> bool:
        return all(u.status == AMBIGUOUS for u in self.uses)

    def to_dict(self, show: Show = _same) -> dict[str, Any]:
        head = _brief(self.symbol, show) if self.symbol else {"qualified_name": None, "path": show(self.path)}
        return {
            **head,
            "depth": self.depth,
            "ambiguous": self.ambiguous,
            "lines": [u.reference.line for u in self.uses],
            "calls": [u.to_dict(show, scope=False) for u in self.uses],
        }


@dataclass
class Graph:
    """What one question found: the definitions it was about, and the edges (uses) around them."""

    name: str
    targets: list[Symbol]
    uses: list[Use] = field(default_factory=list)
    callers: list[Caller] = field(default_factory=list)
    unresolved: list[Use] = field(default_factory=list)


def targets_of(source: ReferenceSource, name: str, state: int | None) -> list[Symbol]:
    """The definitions ``name`` names exactly (a plain or a qualified name)."""
    if not name.strip():
        raise InputError("empty name: give a definition's name such as parse_filter or Pool.get")

    def load() -> list[Symbol]:
        found = [m for m in find(source, name, mode="exact", state=state, limit=500) if m.match == "exact"]
        exact = [m.symbol for m in found if m.score == 1.0]  # as written beats equal ignoring case
        return exact or [m.symbol for m in found]

    cache = cached.for_state(source, state)
    return list(cache.read(("targets", name), load) if cache is not None else load())


def _wanted(name: str, targets: Sequence[Symbol]) -> set[str]:
    parts = split_qualified(name)
    return {t.name for t in targets} or ({parts[-1]} if parts else set())


def uses_of(
    source: ReferenceSource, name: str, *, state: int | None, kinds: Sequence[str] | None = None
) -> Graph:
    """Every use of ``name`` (its definitions' names), resolved: those resolved to one of its
    definitions, ambiguous ones whose candidates include one, and, when the name has no definition
    in the index, the unresolved uses of it (``print``, a library's class)."""
    resolver = cached.resolver(source, state)
    targets = targets_of(source, name, state)
    ids = {t.id for t in targets}
    refs = cached.references(source, state, sorted(_wanted(name, targets)), kinds)
    graph = Graph(name, targets)
    for use in resolver.resolve(refs):
        hit = any(t.id in ids for t in use.targets)
        if hit and use.status in (RESOLVED, AMBIGUOUS):
            graph.uses.append(use)
        elif not targets and use.status == UNRESOLVED:
            graph.unresolved.append(use)
    return graph


def callers(source: ReferenceSource, name: str, *, state: int | None, depth: int = 1) -> Graph:
    """The definitions that call ``name`` (a call, ``new``), grouped by caller; with ``depth`` > 1
    their callers too (through resolved calls only), each caller listed once, at its first depth."""
    depth = _depth(depth)
    graph = uses_of(source, name, state=state, kinds=CALLS)
    resolver = cached.resolver(source, state)
    seen = {t.id for t in graph.targets}
    level = _group(graph.uses, 1)
    while level:
        graph.callers.extend(level)
        d = level[0].depth
        nxt = [
            c.symbol for c in level if c.symbol is not None and not c.ambiguous and c.symbol.id not in seen
        ]
        seen.update(s.id for s in nxt)
        if d >= depth or not nxt:
            break
        ids = {s.id for s in nxt}
        refs = cached.references(source, state, sorted({s.name for s in nxt}), CALLS)
        found = [u for u in resolver.resolve(refs) if u.status == RESOLVED and u.targets[0].id in ids]
        level = _group(found, d + 1)
    return graph


def _group(uses: Sequence[Use], depth: int) -> list[Caller]:
    by: dict[tuple[str, int | None], list[Use]] = {}
    for use in uses:
        key = (use.reference.path, use.scope.id if use.scope else None)
        by.setdefault(key, []).append(use)
    out = [Caller(us[0].scope, us[0].reference.path, tuple(us), depth) for us in by.values()]
    return sorted(out, key=lambda c: (c.ambiguous, c.path, c.symbol.start_line if c.symbol else 0))


@dataclass(frozen=True)
class Callee:
    """A definition the target calls (or, unresolved, a name it calls that the index lacks)."""

    name: str
    depth: int
    caller: Symbol
    uses: tuple[Use, ...]

    @property
    def status(self) -> str:
        return self.uses[0].status

    def to_dict(self, show: Show = _same) -> dict[str, Any]:
        first = self.uses[0]
        out = {
            "name": self.name,
            "depth": self.depth,
            "status": first.status,
            "caller": self.caller.qualified_name,
            "lines": [u.reference.line for u in self.uses],
            "sites": [f"{show(u.reference.path)}:{u.reference.line}-{u.reference.line}" for u in self.uses],
        }
        if first.status == RESOLVED:
            out["definition"] = _brief(first.targets[0], show)
        elif first.targets:
            out["candidates"] = [_brief(t, show) for t in first.targets]
        return out


def callees(
    source: ReferenceSource, name: str, *, state: int | None, depth: int = 1
) -> tuple[list[Symbol], list[Callee]]:
    """What the definitions named ``name`` call, one entry per called definition (calls it makes
    to one name that resolve alike are one entry), resolved first; ``depth`` > 1 follows resolved
    callees."""
    depth = _depth(depth)
    resolver = cached.resolver(source, state)
    targets = targets_of(source, name, state)
    out: list[Callee] = []
    seen = {t.id for t in targets}
    level = list(targets)
    for d in range(1, depth + 1):
        nxt: list[Symbol] = []
        for symbol in level:
            refs = cached.references_in(
                source, state, symbol.document_id, (symbol.start_line, symbol.end_line)
            )
            by: dict[tuple[str, tuple[int, ...]], list[Use]] = {}
            for use in resolver.resolve(refs):
                key = (use.reference.name if use.status != RESOLVED else "", tuple(t.id for t in use.targets))
                by.setdefault(key, []).append(use)
            for uses in by.values():
                first = uses[0]
                label = first.targets[0].qualified_name if first.status == RESOLVED else first.reference.name
                out.append(Callee(label, d, symbol, tuple(uses)))
                if first.status == RESOLVED and first.targets[0].id not in seen:
                    seen.add(first.targets[0].id)
                    nxt.append(first.targets[0])
        level = nxt
        if not level:
            break
    order = {RESOLVED: 0, AMBIGUOUS: 1, UNRESOLVED: 2}
    out.sort(key=lambda c: (c.depth, order[c.status], c.uses[0].reference.line))
    return targets, out


@dataclass(frozen=True)
class Impacted:
    """A definition (or a file's top level) that depends on the target, ``depth`` uses away, with
    its score: the sum over its edges of 1 (1/candidates for an ambiguous one) over the depth."""

    symbol: Symbol | None
    path: str
    depth: int
    score: float
    edges: int
    ambiguous: int

    def to_dict(self, show: Show = _same) -> dict[str, Any]:
        head = _brief(self.symbol, show) if self.symbol else {"qualified_name": None, "path": show(self.path)}
        return {
            **head,
            "depth": self.depth,
            "score": round(self.score, 4),
            "edges": self.edges,
            "ambiguous": self.ambiguous,
        }


def impact(
    source: ReferenceSource, targets: Sequence[Symbol], *, state: int | None, depth: int = 2
) -> tuple[list[Impacted], list[dict[str, Any]]]:
    """The definitions that depend on ``targets`` (any use: call, type, base class, import),
    ``depth`` levels of dependents deep, ranked by score (``Impacted``); and the files they are
    in, ranked by the sum of their definitions' scores."""
    depth = _depth(depth)
    resolver = cached.resolver(source, state)
    target_ids = {t.id for t in targets}
    found: dict[tuple[str, int | None], Impacted] = {}
    level = list(targets)
    for d in range(1, depth + 1):
        if not level:
            break
        ids = {s.id for s in level}
        refs = cached.references(source, state, sorted({s.name for s in level}))
        nxt: list[Symbol] = []
        for use in resolver.resolve(refs):
            hits = [t for t in use.targets if t.id in ids]
            if not hits or use.status == UNRESOLVED:
                continue
            if use.scope is not None and use.scope.id in target_ids:
                continue  # a use inside what changes is part of it
            weight = (1.0 if use.status == RESOLVED else 1.0 / len(use.targets)) / d
            key = (use.reference.path, use.scope.id if use.scope else None)
            old = found.get(key)
            if old is None:
                found[key] = Impacted(
                    use.scope, use.reference.path, d, weight, 1, int(use.status == AMBIGUOUS)
                )
                if use.scope is not None and use.status == RESOLVED:
                    nxt.append(use.scope)
            else:
                found[key] = Impacted(
                    old.symbol,
                    old.path,
                    old.depth,
                    old.score + weight,
                    old.edges + 1,
                    old.ambiguous + int(use.status == AMBIGUOUS),
                )
        target_ids.update(s.id for s in nxt)
        level = nxt
    ranked = sorted(found.values(), key=lambda i: (-i.score, i.depth, i.symbol is None, i.path))
    files: dict[str, dict[str, Any]] = {}
    for item in ranked:
        row = files.setdefault(
            item.path, {"path": item.path, "score": 0.0, "definitions": 0, "depth": item.depth}
        )
        row["score"] += item.score
        row["definitions"] += 1
        row["depth"] = min(row["depth"], item.depth)
    file_rows = sorted(files.values(), key=lambda r: (-r["score"], r["path"]))
    for row in file_rows:
        row["score"] = round(row["score"], 4)
    return ranked, file_rows


def _depth(depth: int) -> int:
    if not 1 <= depth <= MAX_DEPTH:
        raise InputError(f"depth must be 1 to {MAX_DEPTH}, got {depth}")
    return depth


# -- answers: the JSON every surface gives (the CLI renders its text from it) ----------------------


def refs_answer(
    source: ReferenceSource, name: str, *, state: int | None, root: str | None = None
) -> dict[str, Any]:
    """Every use of ``name`` grouped by file (``uses_of``)."""
    show = _shower(root)
    graph = uses_of(source, name, state=state)
    shown = graph.uses or graph.unresolved
    files: dict[str, list[dict[str, Any]]] = {}
    for use in shown:
        files.setdefault(show(use.reference.path), []).append(use.to_dict(show))
    return {
        "name": name,
        "definitions": [_brief(t, show) for t in graph.targets],
        "count": len(shown),
        "resolved": sum(u.status == RESOLVED for u in shown),
        "ambiguous": sum(u.status == AMBIGUOUS for u in shown),
        "unresolved": sum(u.status == UNRESOLVED for u in shown),
        "files": [{"path": p, "uses": us} for p, us in files.items()],
    }


def callers_answer(
    source: ReferenceSource, name: str, *, state: int | None, depth: int = 1, root: str | None = None
) -> dict[str, Any]:
    """The callers of ``name`` (``callers``); without a definition in the index, the places that
    call the name all the same (unresolved)."""
    show = _shower(root)
    graph = callers(source, name, state=state, depth=depth)
    found = graph.callers or _group(graph.unresolved, 1)
    return {
        "name": name,
        "depth": depth,
        "definitions": [_brief(t, show) for t in graph.targets],
        "count": len(found),
        "callers": [c.to_dict(show) for c in found],
    }


def callees_answer(
    source: ReferenceSource, name: str, *, state: int | None, depth: int = 1, root: str | None = None
) -> dict[str, Any]:
    show = _shower(root)
    targets, found = callees(source, name, state=state, depth=depth)
    return {
        "name": name,
        "depth": depth,
        "definitions": [_brief(t, show) for t in targets],
        "count": len(found),
        "callees": [c.to_dict(show) for c in found],
    }


def impact_answer(
    source: ReferenceSource,
    target: str,
    *,
    state: int | None,
    path: str | None,
    depth: int = 2,
    limit: int = 50,
    root: str | None = None,
) -> dict[str, Any]:
    """What depends on the definitions of the stored ``path`` (when the target names a file) or on
    the definitions named ``target``: definitions and files, ranked (``impact``)."""
    if path is not None:
        targets = source.symbols(path=path, state=state)
    else:
        targets = targets_of(source, target, state)
        if not targets:
            raise InputError(
                f"no document {target!r} in the store and no definition of that name "
                "(a path as `hybrid-rag documents` shows it, or a name such as parse_filter, Pool.get)"
            )
    ranked, files = impact(source, targets, state=state, depth=depth)
    show = _shower(root)
    for row in files:
        row["path"] = show(row["path"])
    return {
        "target": target,
        "kind": "path" if path is not None else "name",
        "depth": depth,
        "definitions": [_brief(t, show) for t in targets],
        "count": len(ranked),
        "dependents": [i.to_dict(show) for i in ranked[:limit]],
        "files": files[:limit],
    }
