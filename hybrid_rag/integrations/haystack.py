"""A Haystack retriever component over hybrid-rag (extra ``[haystack]``).

>>> from haystack import Pipeline  # doctest: +SKIP
>>> from hybrid_rag.integrations.haystack import HybridRagRetriever  # doctest: +SKIP
>>> pipeline = Pipeline()  # doctest: +SKIP
>>> pipeline.add_component("retriever", HybridRagRetriever(data_dir="data", top_k=5))  # doctest: +SKIP
>>> out = pipeline.run({"retriever": {"query": "how are ties broken?", "top_k": 3}})  # doctest: +SKIP
>>> out["retriever"]["documents"][0].meta["citation"]  # doctest: +SKIP

``run(query, filters=None, top_k=None, mode=None, features=None, group=None)`` returns
``{"documents": [...]}``, each a Haystack ``Document`` with its ``score`` and a ``meta`` holding
``path``, ``start_line``, ``end_line``, ``citation``, ``score``, ``breakdown`` (and with
``group="file"``, one document per file, ``units``: its best units). ``filters`` are in hybrid-rag's filter
language (a string, a list of strings, or a mapping field -> value(s)); given at run time they
replace the component's own. Built on a ``data_dir`` the component serializes with its pipeline.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from haystack import Document, component

from hybrid_rag.integrations.source import Source, hit_metadata

if TYPE_CHECKING:
    from hybrid_rag.client import Client
    from hybrid_rag.engine import Engine


@component
class HybridRagRetriever:
    """Hybrid (dense + BM25) retrieval from an ``Engine``, a data dir, or a remote ``Client``."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        client: Client | None = None,
        top_k: int | None = None,
        filters: Any = None,
        mode: str | None = None,
        features: Mapping[str, bool] | None = None,
        group: str | None = None,
    ) -> None:
        self._source = Source(engine, data_dir=data_dir, client=client)
        self.engine, self.client = engine, client
        self.data_dir = os.fspath(data_dir) if data_dir is not None else None
        self.top_k = top_k
        self.filters = filters
        self.mode = mode
        self.features = dict(features) if features is not None else None
        self.group = group

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        filters: Any = None,
        top_k: int | None = None,
        mode: str | None = None,
        features: dict[str, bool] | None = None,
        group: str | None = None,
    ) -> dict[str, list[Document]]:
        """The ranked documents for ``query``; each argument given replaces the component's own
        (``group="file"``: one document per file, its best units in ``meta["units"]``)."""
        hits, version = self._source.search(
            query,
            top_k=self.top_k if top_k is None else top_k,
            filters=self.filters if filters is None else filters,
            mode=mode or self.mode,
            features=self.features if features is None else features,
            group=group or self.group,
        )
        documents = [
            Document(
                id=str(hit["id"]),
                content=hit["text"],
                meta=hit_metadata(hit, version),
                score=float(hit["score"]),
            )
            for hit in hits
        ]
        return {"documents": documents}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        filters: Any = None,
        top_k: int | None = None,
        mode: str | None = None,
        features: dict[str, bool] | None = None,
        group: str | None = None,
    ) -> dict[str, list[Document]]:
        """``run`` in a worker thread, for Haystack's ``AsyncPipeline``."""
        return await asyncio.to_thread(self.run, query, filters, top_k, mode, features, group)
