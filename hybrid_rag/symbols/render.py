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
