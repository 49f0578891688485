"""The store's records: a document, an index version, a file's chunks to write."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hybrid_rag.symbols.model import ReferenceSpan, SymbolSpan
from hybrid_rag.types import ChunkSpan, LoadedFile, SourceType


@dataclass(frozen=True)
class DocumentRecord:
    id: int
    path: str
    collection: str
    sha256: str
    size: int
    mtime: float
    source_type: SourceType
    language: str
    ingested_at: datetime
    meta: Mapping[str, Any] = field(default_factory=dict)
    languages: Mapping[str, int] = field(default_factory=dict)  # its chunks per natural language


@dataclass(frozen=True)
class IndexVersionRecord:
    name: str
    version: int
    built_at: datetime
    source_hash: str
    params: Mapping[str, Any]
    status: str


@dataclass(frozen=True)
class FileChunks:
    """One file to (re)write in the store, with the chunks the chunker cut from it and the
    definitions and the references found in it (``hybrid_rag/symbols``)."""

    file: LoadedFile
    spans: Sequence[ChunkSpan]
    # span index -> sha256 of the kept chunk it nearly repeats: stored, never embedded nor indexed
    duplicate_of: Mapping[int, str] = field(default_factory=dict)
    symbols: Sequence[SymbolSpan] = ()
    references: Sequence[ReferenceSpan] = ()

    @property
    def kept(self) -> list[ChunkSpan]:
        """The spans that are indexed (all but the near-duplicates)."""
        return [sp for i, sp in enumerate(self.spans) if i not in self.duplicate_of]
