"""Given a hybrid_rag.client.Client, each framework retriever searches a running server and answers
what it answers over the local engine; the server's errors arrive as the client raises them
(ServerError naming the field)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from framework_corpus import QUESTION, fake_settings
from live_server import KEY, LiveServer

from hybrid_rag.client import Client, ServerError
from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys


@pytest.fixture(scope="module")
def client(store_dir: Path) -> Iterator[Client]:
    server = LiveServer(fake_settings(store_dir), ApiKeys.of((KEY,)))
    with Client(server.url, api_key=KEY) as remote:
        yield remote
    server.stop()


def test_langchain_over_the_client(client: Client, shared_engine: Engine) -> None:
    pytest.importorskip("langchain_core")
    from hybrid_rag.integrations.langchain import HybridRagRetriever

    remote = HybridRagRetriever(client=client, k=3, filters="source_type=code").invoke(QUESTION)
    local = HybridRagRetriever(engine=shared_engine, k=3, filters="source_type=code").invoke(QUESTION)
    assert [d.metadata["citation"] for d in remote] == [d.metadata["citation"] for d in local]
    assert [d.metadata["score"] for d in remote] == pytest.approx([d.metadata["score"] for d in local])
    with pytest.raises(ServerError, match="unknown feature") as refused:
        HybridRagRetriever(client=client).invoke(QUESTION, features={"no_such_stage": True})
    assert refused.value.status == 422 and refused.value.field == "features"


def test_llamaindex_over_the_client(client: Client, shared_engine: Engine) -> None:
    pytest.importorskip("llama_index.core")
    from hybrid_rag.integrations.llamaindex import HybridRagRetriever

    remote = HybridRagRetriever(client=client, similarity_top_k=2, mode="bm25").retrieve(QUESTION)
    local = HybridRagRetriever(shared_engine, similarity_top_k=2, mode="bm25").retrieve(QUESTION)
    assert [n.node.metadata["citation"] for n in remote] == [n.node.metadata["citation"] for n in local]


def test_haystack_over_the_client(client: Client, shared_engine: Engine) -> None:
    pytest.importorskip("haystack")
    from hybrid_rag.integrations.haystack import HybridRagRetriever

    remote = HybridRagRetriever(client=client).run(QUESTION, top_k=4, features={"mmr": True})["documents"]
    local = HybridRagRetriever(shared_engine).run(QUESTION, top_k=4, features={"mmr": True})["documents"]
    assert [d.meta["citation"] for d in remote] == [d.meta["citation"] for d in local]
    with pytest.raises(ServerError, match="unknown filter field") as refused:
        HybridRagRetriever(client=client).run(QUESTION, filters="no_such_field=1")
    assert refused.value.field == "filters"
