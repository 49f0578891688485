"""Symbol answers as text (the CLI's) and as JSON (the CLI's ``--json``, HTTP and MCP): every
definition cited ``path:start-end``, paths as every other output shows them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybrid_rag.symbols.model import SymbolMatch
from hybrid_rag.symbols.search import OutlineEntry, outline_tree


def matches_text(matches: Sequence[SymbolMatch]) -> str:
    """One definition a paragraph: ``citation  kind qualified_name  (match)``, its signature, its doc."""
    lines = []
    for m in matches:
        s = m.symbol
        lines.append(f"{s.citation}  {s.kind} {s.qualified_name}  ({m.match})")
        if s.signature:
            lines.append(f"    {s.signature}")
        if s.doc:
            lines.append(f"    {s.doc}")
    return "\n".join(lines)


def outline_text(entries: Sequence[OutlineEntry]) -> str:
    """The outline indented by depth, each line ``kind name  path:start-end``."""
    return "\n".join(f"{'  ' * e.depth}{e.symbol.kind} {e.symbol.name}  {e.symbol.citation}" for e in entries)


def matches_json(name: str, matches: Sequence[SymbolMatch]) -> dict[str, Any]:
    return {"name": name, "symbols": [m.to_dict() for m in matches]}


def outline_json(path: str, entries: Sequence[OutlineEntry]) -> dict[str, Any]:
    return {"path": path, "count": len(entries), "symbols": outline_tree(entries)}


# -- reference answers (``symbols/questions.py``) as text: the CLI's -------------------------------


def _definitions_line(answer: dict[str, Any], what: str) -> str:
    defs = answer.get("definitions") or []
    if not defs:
        name = answer.get("name") or answer.get("target")
        return f"{what} {name} (no definition in the index: uses of the name)"
    shown = ", ".join(f"{d['kind']} {d['qualified_name']}  {d['citation']}" for d in defs[:5])
    more = f" (+{len(defs) - 5} more)" if len(defs) > 5 else ""
    return f"{what} {shown}{more}"


def _target(use: dict[str, Any]) -> str:
    if use["status"] == "resolved":
        d = use["definition"]
        return f"-> {d['qualified_name']} {d['citation']} ({use['via']})"
    if use.get("candidates"):
        found = ", ".join(f"{c['qualified_name']} {c['citation']}" for c in use["candidates"][:4])
        return f"ambiguous: {found}"
    return "not in the index"


def refs_text(answer: dict[str, Any]) -> str:
    """Uses grouped by file: ``path:line-line  kind name  in scope  -> definition (rule)``."""
    lines = [_definitions_line(answer, "uses of")]
    for group in answer["files"]:
        lines.append(group["path"])
        for use in group["uses"]:
            name = f"{use['qualifier']}.{use['name']}" if use["qualifier"] else use["name"]
            scope = f"  in {use['scope']['qualified_name']}" if use.get("scope") else ""
            lines.append(f"  {use['citation']}  {use['kind']} {name}{scope}  {_target(use)}")
    return "\n".join(lines)


def callers_text(answer: dict[str, Any]) -> str:
    """One caller a line, indented by depth; ``?`` marks a caller whose calls are ambiguous."""
    lines = [_definitions_line(answer, "callers of")]
    for c in answer["callers"]:
        mark = "? " if c["ambiguous"] else ""
        where = ", ".join(str(n) for n in c["lines"])
        head = f"{c['citation']}  {c['kind']} {c['qualified_name']}" if c["qualified_name"] else c["path"]
        note = "; ambiguous" if c["ambiguous"] else ""
        lines.append(f"{'  ' * (c['depth'] - 1)}{mark}{head}  (line {where}{note})")
    return "\n".join(lines)


def callees_text(answer: dict[str, Any]) -> str:
    """One called definition a line (``?`` ambiguous, ``-`` not in the index), indented by depth."""
    lines = [_definitions_line(answer, "callees of")]
    for c in answer["callees"]:
        where = ", ".join(str(n) for n in c["lines"])
        pad = "  " * (c["depth"] - 1)
        if c["status"] == "resolved":
            d = c["definition"]
            lines.append(f"{pad}{d['citation']}  {d['kind']} {d['qualified_name']}  (line {where})")
        elif c["status"] == "ambiguous":
            found = ", ".join(f"{x['qualified_name']} {x['citation']}" for x in c["candidates"][:4])
            lines.append(f"{pad}? {c['name']}  (line {where}; ambiguous: {found})")
        else:
            lines.append(f"{pad}- {c['name']}  (line {where}; not in the index)")
    return "\n".join(lines)


def impact_text(answer: dict[str, Any]) -> str:
    """The dependents ranked by score, then the files."""
    head = (
        f"impact of {answer['target']} ({len(answer['definitions'])} definitions, {answer['depth']} levels)"
    )
    lines = [head, "definitions:"]
    for d in answer["dependents"]:
        what = (
            f"{d['citation']}  {d['kind']} {d['qualified_name']}"
            if d["qualified_name"]
            else f"{d['path']} (top level)"
        )
        amb = f", {d['ambiguous']} ambiguous" if d["ambiguous"] else ""
        lines.append(f"  {d['score']:6.2f}  {what}  (depth {d['depth']}, {d['edges']} uses{amb})")
    lines.append("files:")
    for f in answer["files"]:
        lines.append(f"  {f['score']:6.2f}  {f['path']}  ({f['definitions']} dependents, depth {f['depth']})")
    return "\n".join(lines)
