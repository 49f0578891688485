"""hybrid-rag: a local-first, multi-stage retrieval engine for RAG.

The public API::

    from hybrid_rag import HybridRetriever
    with HybridRetriever.open("data") as retriever:  # an ingested data dir, the CLI's defaults
        result = retriever.query("how is the token budget kept?", top_k=5)

Names load on first use, so ``import hybrid_rag`` stays cheap (no torch, no Faiss).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "HybridRetriever": "hybrid_rag.engine",
    "ContextBuilder": "hybrid_rag.context.builder",
    "MetadataStore": "hybrid_rag.store.store",
    "Settings": "hybrid_rag.settings",
    "load_settings": "hybrid_rag.settings",
    "Engine": "hybrid_rag.engine",
    "QueryResult": "hybrid_rag.types",
    "ScoredChunk": "hybrid_rag.types",
}
__all__ = [  # noqa: RUF022 - the order of _EXPORTS
    "HybridRetriever",
    "ContextBuilder",
    "MetadataStore",
    "Settings",
    "load_settings",
    "Engine",
    "QueryResult",
    "ScoredChunk",
]

if TYPE_CHECKING:
    from hybrid_rag.context.builder import ContextBuilder
    from hybrid_rag.engine import Engine, HybridRetriever
    from hybrid_rag.settings import Settings, load_settings
    from hybrid_rag.store.store import MetadataStore
    from hybrid_rag.types import QueryResult, ScoredChunk


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'hybrid_rag' has no attribute {name!r}")
