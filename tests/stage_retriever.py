"""A HybridRetriever for testing one stage method (fuse, diversify, ...): settings, no store or index."""

from __future__ import annotations

from types import SimpleNamespace

from hybrid_rag.retrieval.retriever import HybridRetriever
from hybrid_rag.settings import Settings


def stage_retriever(settings: Settings) -> HybridRetriever:
    """The retriever's stages under ``settings``, with a stub reranker named ``stub``; a method
    that reads the store, the embedder or the index fails on None."""
    return HybridRetriever(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        retrieval=settings.retrieval,
        features=settings.features,
        rerank=settings.rerank,
        mmr=settings.mmr,
        reranker=SimpleNamespace(name="stub"),  # type: ignore[arg-type]
    )
