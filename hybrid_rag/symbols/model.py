"""The symbol index's data: what ingest extracts (``SymbolSpan``) and what the store gives back
(``Symbol``, with its document's path and the chunk that holds it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hybrid_rag.types import fields_of


@dataclass(frozen=True)
class SymbolSpan:
    """One definition as a parser found it in a file: lines 1-based inclusive, ``doc`` the first
    sentence of its doc comment ("" without one), ``parent`` the qualified name of the enclosing
    definition (None at the top level)."""

    name: str
    kind: str
    qualified_name: str
    signature: str
    start_line: int
    end_line: int
    doc: str = ""
    parent: str | None = None


@dataclass(frozen=True)
class ReferenceSpan:
    """One use of a name as a parser found it in a file (``hybrid_rag.code.units.CodeReference``):
    ``scope`` is the position, among the file's ``SymbolSpan``s, of the definition holding it."""

    name: str
    kind: str
    line: int
    qualifier: str = ""
    module: str = ""
    scope: int | None = None


@dataclass(frozen=True)
class Reference:
    """A stored use of a name: its span, the document (path, language) it is in."""

    id: int
    document_id: int
    path: str
    language: str
    name: str
    kind: str
    line: int
    qualifier: str = ""
    module: str = ""
    scope: int | None = None

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.line}-{self.line}"


@dataclass(frozen=True)
class Symbol:
    """A stored definition: its span, the document it is in, and the chunk holding its first line
    (None when no chunk of the file does, e.g. a near-duplicate chunk was dropped)."""

    id: int
    document_id: int
    chunk_id: int | None
    path: str
    language: str
    position: int
    name: str
    kind: str
    qualified_name: str
    signature: str
    start_line: int
    end_line: int
    doc: str = ""
    parent: str | None = None

    @property
    def citation(self) -> str:
        """``path:start-end``, as every answer cites a symbol."""
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_of(self, "name", "kind", "qualified_name", "signature", "path", "start_line"),
            **fields_of(self, "end_line", "citation", "doc", "parent", "language"),
        }


@dataclass(frozen=True)
class SymbolMatch:
    """A symbol found by a lookup: how it matched (exact, prefix, fuzzy) and how well (0..1)."""

    symbol: Symbol
    match: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.symbol.to_dict(), "match": self.match, "score": round(self.score, 4)}
