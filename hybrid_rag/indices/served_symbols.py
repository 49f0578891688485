"""What the engine's symbol methods read: the served index version's store state, and a path as
a user gives it (shown, stored or relative to the working directory) as the stored path."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Sequence

from hybrid_rag.errors import HybridRagError
from hybrid_rag.indices.live import IndexConfig, open_versions
from hybrid_rag.indices.retention import STORE_STATE
from hybrid_rag.paths import display_path, stored_path
from hybrid_rag.symbols.model import Symbol, SymbolMatch
from hybrid_rag.symbols.search import OutlineEntry


def served_state(config: IndexConfig) -> int | None:
    """The store state the live index version was built from (its manifest's ``store_state``), so
    symbol answers agree with what queries retrieve; None (the current state) when no version is
    live or its manifest predates snapshots."""
    try:
        versions = open_versions(config)
        live = versions.current()
        if live is None:
            return None
        state = versions.manifest(live).get(STORE_STATE)
    except HybridRagError:
        return None
    return int(state) if isinstance(state, int) else None


def resolve_path(given: str, stored: Collection[str], root: str | None) -> str | None:
    """The stored path ``given`` names: as stored, as shown (relative to the ingested root), or
    relative to the working directory; None when it names no stored document."""
    for candidate in (given, stored_path(given, root), os.path.abspath(given)):
        if candidate in stored:
            return candidate
    return None


def shown(symbol: Symbol, root: str | None) -> Symbol:
    return dataclasses.replace(symbol, path=display_path(symbol.path, root)) if root else symbol


def shown_matches(matches: Sequence[SymbolMatch], root: str | None) -> list[SymbolMatch]:
    return [dataclasses.replace(m, symbol=shown(m.symbol, root)) for m in matches]


def shown_outline(entries: Sequence[OutlineEntry], root: str | None) -> list[OutlineEntry]:
    return [dataclasses.replace(e, symbol=shown(e.symbol, root)) for e in entries]
