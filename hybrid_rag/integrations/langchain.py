"""A LangChain retriever over hybrid-rag (extra ``[langchain]``).

>>> from hybrid_rag.integrations.langchain import HybridRagRetriever  # doctest: +SKIP
>>> retriever = HybridRagRetriever(data_dir="data", k=5, filters="source_type=code")  # doctest: +SKIP
>>> docs = retriever.invoke("how are ties broken?", k=3)  # doctest: +SKIP
>>> docs[0].metadata["citation"], docs[0].metadata["breakdown"]  # doctest: +SKIP

``k``, ``filters``, ``mode``, ``features`` and ``group`` are set on the retriever and can be given again to
one call (``invoke(query, k=3, filters=...)``, and the same to ``ainvoke``); each document's
``metadata`` holds ``path``, ``start_line``, ``end_line``, ``citation``, ``score``, ``breakdown``
and the chunk's fields.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from hybrid_rag.integrations.source import Source, hit_metadata

_CALL_ARGS = ("k", "filters", "mode", "features", "group")


class HybridRagRetriever(BaseRetriever):
    """Hybrid (dense + BM25) retrieval from an ``Engine``, a data dir, or a remote ``Client``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any = None
    """A ``hybrid_rag.Engine``."""
    data_dir: str | os.PathLike[str] | None = None
    """An ingested data dir, opened with the CLI's defaults on first use (instead of ``engine``)."""
    client: Any = None
    """A ``hybrid_rag.client.Client`` of a running ``hybrid-rag serve`` (instead of ``engine``)."""
    k: int | None = Field(default=None, ge=0)
    """Documents to return (None: the engine's ``retrieval.top_k``)."""
    filters: Any = None
    """A filter expression, a list of them (ANDed) or a mapping, in hybrid-rag's filter language."""
    mode: str | None = None
    """``dense``, ``bm25`` or ``hybrid`` (None: ``retrieval.mode``)."""
    features: dict[str, bool] | None = None
    """Per-call stage switches, e.g. ``{"rerank": True, "mmr": True}``."""
    group: str | None = None
    """``file``: one document per file, ranked by its evidence, its best units in ``metadata["units"]``
    (``k`` counts files); None or ``chunk``: one per chunk."""

    _source: Source = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._source = Source(self.engine, data_dir=self.data_dir, client=self.client)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._documents(query, kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """``_get_relevant_documents`` in a worker thread, with the same per-call arguments
        (LangChain's default async path drops them)."""
        return await asyncio.to_thread(self._documents, query, kwargs)

    def _documents(self, query: str, kwargs: dict[str, Any]) -> list[Document]:
        unknown = sorted(set(kwargs) - set(_CALL_ARGS) - {"verbose"})  # verbose: LangChain's own
        if unknown:
            raise TypeError(f"unexpected argument {', '.join(unknown)}; valid: {', '.join(_CALL_ARGS)}")
        args = {name: kwargs.get(name, getattr(self, name)) for name in _CALL_ARGS}
        hits, version = self._source.search(
            query,
            top_k=args["k"],
            filters=args["filters"],
            mode=args["mode"],
            features=args["features"],
            group=args["group"],
        )
        return [
            Document(page_content=hit["text"], metadata=hit_metadata(hit, version), id=str(hit["id"]))
            for hit in hits
        ]
