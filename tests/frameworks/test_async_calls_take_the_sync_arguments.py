"""Each framework's async path takes the arguments its sync path takes and answers the same:
LangChain's ``ainvoke(q, k=, filters=, mode=, features=)``, Haystack's ``run_async(...)`` and
LlamaIndex's ``aretrieve`` with the instance's settings."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from framework_corpus import QUESTION

from hybrid_rag.engine import Engine

CALLS: list[dict[str, Any]] = [
    {"k": 2},
    {"filters": "source_type=code"},
    {"mode": "bm25"},
    {"features": {"mmr": True}},
    {"k": 1, "filters": "path~**/*.md", "mode": "dense"},
]


@pytest.mark.parametrize("kwargs", CALLS, ids=lambda kw: ",".join(kw))
def test_langchain_ainvoke_takes_invokes_arguments(shared_engine: Engine, kwargs: dict[str, Any]) -> None:
    pytest.importorskip("langchain_core")
    from hybrid_rag.integrations.langchain import HybridRagRetriever

    retriever = HybridRagRetriever(engine=shared_engine, k=4)
    sync = retriever.invoke(QUESTION, **kwargs)
    docs = asyncio.run(retriever.ainvoke(QUESTION, **kwargs))
    assert docs and [d.id for d in docs] == [d.id for d in sync]
    assert [d.metadata["breakdown"] for d in docs] == [d.metadata["breakdown"] for d in sync]


def test_langchain_ainvoke_rejects_what_invoke_rejects(shared_engine: Engine) -> None:
    pytest.importorskip("langchain_core")
    from hybrid_rag.integrations.langchain import HybridRagRetriever

    with pytest.raises(TypeError, match="unexpected argument top_k"):
        asyncio.run(HybridRagRetriever(engine=shared_engine).ainvoke(QUESTION, top_k=3))


@pytest.mark.parametrize("kwargs", CALLS, ids=lambda kw: ",".join(kw))
def test_haystack_run_async_takes_runs_arguments(shared_engine: Engine, kwargs: dict[str, Any]) -> None:
    pytest.importorskip("haystack")
    from hybrid_rag.integrations.haystack import HybridRagRetriever

    args = {("top_k" if k == "k" else k): v for k, v in kwargs.items()}
    retriever = HybridRagRetriever(shared_engine, top_k=4)
    sync = retriever.run(QUESTION, **args)["documents"]
    docs = asyncio.run(retriever.run_async(QUESTION, **args))["documents"]
    assert docs and [d.id for d in docs] == [d.id for d in sync]


@pytest.mark.parametrize("kwargs", CALLS, ids=lambda kw: ",".join(kw))
def test_llamaindex_aretrieve_uses_the_settings_retrieve_uses(
    shared_engine: Engine, kwargs: dict[str, Any]
) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import QueryBundle

    from hybrid_rag.integrations.llamaindex import HybridRagRetriever

    args = {("similarity_top_k" if k == "k" else k): v for k, v in kwargs.items()}
    retriever = HybridRagRetriever(shared_engine, **{"similarity_top_k": 4, **args})
    sync = retriever.retrieve(QUESTION)
    nodes = asyncio.run(retriever.aretrieve(QueryBundle(QUESTION)))
    assert nodes and [n.node.node_id for n in nodes] == [n.node.node_id for n in sync]
    assert [n.score for n in nodes] == pytest.approx([n.score for n in sync])
