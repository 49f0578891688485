"""A LlamaIndex retriever over hybrid-rag (extra ``[llamaindex]``).

>>> from hybrid_rag.integrations.llamaindex import HybridRagRetriever  # doctest: +SKIP
>>> retriever = HybridRagRetriever(data_dir="data", similarity_top_k=5)  # doctest: +SKIP
>>> nodes = retriever.retrieve("how are ties broken?")  # doctest: +SKIP
>>> nodes[0].score, nodes[0].node.metadata["citation"]  # doctest: +SKIP

Returns ``NodeWithScore`` (a ``TextNode`` whose id is the chunk id and whose ``metadata`` holds
``path``, ``start_line``, ``end_line``, ``citation``, ``score``, ``breakdown``), usable by any
LlamaIndex query engine (``RetrieverQueryEngine.from_args(retriever, llm=...)``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from hybrid_rag.integrations.source import Source, hit_metadata

if TYPE_CHECKING:
    from hybrid_rag.client import Client
    from hybrid_rag.engine import Engine

# kept in the node but out of the text an LLM or an embedder sees
_HIDDEN = ["id", "score", "breakdown", "index_version", "start_line", "end_line", "meta", "units"]


class HybridRagRetriever(BaseRetriever):
    """Hybrid (dense + BM25) retrieval from an ``Engine``, a data dir, or a remote ``Client``.

    ``similarity_top_k`` (None: ``retrieval.top_k``), ``filters`` (hybrid-rag's filter language),
    ``mode``, ``features`` and ``group`` (``file``: one node per file, ranked by its evidence, its best
    units in ``metadata["units"]``) are carried into every query; change them on the instance between
    calls.
    """

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        client: Client | None = None,
        similarity_top_k: int | None = None,
        filters: Any = None,
        mode: str | None = None,
        features: Mapping[str, bool] | None = None,
        group: str | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self._source = Source(engine, data_dir=data_dir, client=client)
        self.similarity_top_k = similarity_top_k
        self.filters = filters
        self.mode = mode
        self.features = dict(features) if features is not None else None
        self.group = group
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits, version = self._source.search(
            query_bundle.query_str,
            top_k=self.similarity_top_k,
            filters=self.filters,
            mode=self.mode,
            features=self.features,
            group=self.group,
        )
        nodes = []
        for hit in hits:
            node = TextNode(
                id_=str(hit["id"]),
                text=hit["text"],
                metadata=hit_metadata(hit, version),
                excluded_llm_metadata_keys=list(_HIDDEN),
                excluded_embed_metadata_keys=list(_HIDDEN),
            )
            nodes.append(NodeWithScore(node=node, score=float(hit["score"])))
        return nodes
