"""The LlamaIndex retriever returns NodeWithScore in the engine's order, with citations and scores in
the node metadata, sync and async, and carries filters, mode and features into the engine."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core")
from framework_corpus import QUESTION
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError
from hybrid_rag.integrations.llamaindex import HybridRagRetriever


def test_nodes_follow_the_engine_ranking(shared_engine: Engine) -> None:
    nodes = HybridRagRetriever(shared_engine, similarity_top_k=3).retrieve(QUESTION)
    result = shared_engine.query(QUESTION, top_k=3)
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert [n.node.node_id for n in nodes] == [str(c.id) for c in result.chunks]
    assert [n.score for n in nodes] == pytest.approx([c.score for c in result.chunks])
    first, hit = nodes[0].node, result.chunks[0]
    assert first.get_content() == hit.text
    assert first.metadata["citation"] == hit.citation and first.metadata["path"] == hit.path
    assert first.metadata["breakdown"] == pytest.approx(dict(hit.breakdown))
    assert "breakdown" not in first.get_content(metadata_mode=MetadataMode.LLM)
    assert hit.citation in first.get_content(metadata_mode=MetadataMode.LLM)


def test_async_retrieval_gives_the_same_nodes(shared_engine: Engine) -> None:
    retriever = HybridRagRetriever(shared_engine, similarity_top_k=2)
    nodes = asyncio.run(retriever.aretrieve(QueryBundle(QUESTION)))
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in retriever.retrieve(QUESTION)]


def test_filters_mode_and_features_reach_the_engine(shared_engine: Engine) -> None:
    retriever = HybridRagRetriever(
        shared_engine, similarity_top_k=6, filters="source_type=text", mode="bm25", features={"mmr": True}
    )
    nodes = retriever.retrieve(QUESTION)
    assert nodes and {n.node.metadata["source_type"] for n in nodes} == {"text"}
    assert all("dense" not in n.node.metadata["breakdown"] for n in nodes)
    assert all("mmr_rank" in n.node.metadata["breakdown"] for n in nodes)
    retriever.features = {"no_such_stage": True}
    with pytest.raises(ConfigError, match="unknown feature"):
        retriever.retrieve(QUESTION)
