"""What a build is given and what it gives, shared by every version backend (files, Milvus) below
``build.py`` and ``live.py``, which choose the backend: ``IndexConfig`` (where versions live and how
they are built), ``BuildInputs`` (what a backend's build reads), ``BuildReport`` (what it did),
``LiveIndex`` (one loaded version) and ``source_hash`` (what a version indexed)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import BM25Settings, ChunkingSettings, IndexSettings, MilvusSettings, Settings

if TYPE_CHECKING:
    from hybrid_rag.indices.ann import AnnVectorIndex
    from hybrid_rag.indices.bm25 import BM25IndexManager
    from hybrid_rag.indices.dense import FaissVectorIndex
    from hybrid_rag.indices.multivector import WindowedVectorIndex
    from hybrid_rag.store import MetadataStore

Progress = Callable[[int], None]


@dataclass(frozen=True)
class IndexConfig:
    """Where index versions live and how they are built: what a build writes and a load checks."""

    directory: Path
    index: IndexSettings
    bm25: BM25Settings
    milvus: MilvusSettings = field(default_factory=MilvusSettings)  # index.dense_backend milvus; uri absolute

    @classmethod
    def of(cls, settings: Settings) -> IndexConfig:
        return cls(settings.indices_dir, settings.index, settings.bm25, settings.milvus_config)


@dataclass(frozen=True)
class LiveIndex:
    """One loaded, complete index version."""

    version: int
    dense: FaissVectorIndex | AnnVectorIndex | WindowedVectorIndex
    bm25: BM25IndexManager
    manifest: dict[str, Any] = field(default_factory=dict)
    second: Any = None  # the second vector set (``second_dense.SecondSet``), when the version has one
    hubness: Any = None  # each chunk's radius (``hubness.Radii``), when the version has a table
    questions: Any = None  # radii against its question bank (``question_bank.QuestionRadii``), if any

    @property
    def count(self) -> int:
        return len(self.dense)

    @property
    def dense_status(self) -> str:
        """``""`` when the dense index holds every chunk, else ``"building, 41%"`` (``coverage.py``)."""
        from hybrid_rag.indices.coverage import dense_status

        return dense_status(self.manifest)


class BuildInputs(Protocol):
    """What a backend's build reads (``build.IndexBuilder`` is one)."""

    store: MetadataStore
    embedder: Embedder
    config: IndexConfig
    chunking: ChunkingSettings
    keep_versions: int
    versions: Any  # the backend's versions (``versions.IndexVersions``, ``milvus.versions.MilvusVersions``)


@dataclass(frozen=True)
class BuildReport:
    version: int
    chunks: int
    added: int
    removed: int
    embedded: int
    seconds: dict[str, float]
    incremental: bool
    bm25_update: str = "build"  # "build" (from scratch), "delta", "delta+merge deltas", "delta+merge base"
    repaired: int = 0  # cached vectors that failed their checksum and were embedded again


def source_hash(chunk_hashes: dict[int, str]) -> str:
    """A hash over (chunk id, chunk sha256) pairs: equal exactly when two builds index the same chunks."""
    digest = hashlib.sha256()
    for chunk_id in sorted(chunk_hashes):
        digest.update(f"{chunk_id}:{chunk_hashes[chunk_id]}\n".encode())
    return digest.hexdigest()
