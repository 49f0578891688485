"""With ``group="file"`` the LangChain, LlamaIndex and Haystack retrievers answer one document per
file, ranked as ``Engine.query(group="file")`` ranks the files, its id the path, its text its best
units' texts and its metadata those units' ids and line ranges; a bad ``group`` is the engine's
InputError."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_fixtures import engine_over
from grouped_corpus import QUESTION, write_repository

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError

Files = list[tuple[str, list[int]]]  # a grouped answer: each file's path and its units' ids


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    with engine_over(write_repository(tmp_path_factory.mktemp("grouped_frameworks") / "repo")) as eng:
        yield eng


def _expected(engine: Engine) -> Files:
    result = engine.query(QUESTION, top_k=3, group="file")
    return [(f.path, [u.id for u in f.units]) for f in result.files]


def _check(ids: list[str], metas: list[dict], texts: list[str], expected: Files) -> None:
    assert ids == [path for path, _ in expected]
    assert [[u["id"] for u in m["units"]] for m in metas] == [units for _, units in expected]
    assert metas[0]["path"] == "src/pool.py" and metas[0]["citation"].startswith("src/pool.py:")
    assert texts[0].count("def pool_part_") == len(expected[0][1])  # its units' texts, together


def test_langchain_answers_one_document_a_file(engine: Engine) -> None:
    pytest.importorskip("langchain_core")
    from hybrid_rag.integrations.langchain import HybridRagRetriever

    docs = HybridRagRetriever(engine=engine, k=3, group="file").invoke(QUESTION)
    _check(
        [d.id for d in docs], [d.metadata for d in docs], [d.page_content for d in docs], _expected(engine)
    )
    per_call = HybridRagRetriever(engine=engine, k=3).invoke(QUESTION, group="file")
    assert [d.id for d in per_call] == [d.id for d in docs]
    assert len({d.metadata["path"] for d in HybridRagRetriever(engine=engine, k=3).invoke(QUESTION)}) == 1
    with pytest.raises(InputError, match="group"):
        HybridRagRetriever(engine=engine, group="folder").invoke(QUESTION)


def test_llamaindex_answers_one_node_a_file(engine: Engine) -> None:
    pytest.importorskip("llama_index.core")
    from hybrid_rag.integrations.llamaindex import HybridRagRetriever

    nodes = HybridRagRetriever(engine, similarity_top_k=3, group="file").retrieve(QUESTION)
    _check(
        [n.node.id_ for n in nodes],
        [n.node.metadata for n in nodes],
        [n.node.text for n in nodes],
        _expected(engine),
    )
    assert "units" in nodes[0].node.excluded_llm_metadata_keys


def test_haystack_answers_one_document_a_file(engine: Engine) -> None:
    pytest.importorskip("haystack")
    from hybrid_rag.integrations.haystack import HybridRagRetriever

    docs = HybridRagRetriever(engine, top_k=3, group="file").run(QUESTION)["documents"]
    _check([d.id for d in docs], [d.meta for d in docs], [d.content for d in docs], _expected(engine))
    at_run = HybridRagRetriever(engine, top_k=3).run(QUESTION, group="file")["documents"]
    assert [d.id for d in at_run] == [d.id for d in docs]


def test_over_a_remote_server_the_files_are_the_local_ones(engine: Engine) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("langchain_core")
    from live_server import KEY, LiveServer

    from hybrid_rag.client import Client
    from hybrid_rag.integrations.langchain import HybridRagRetriever
    from hybrid_rag.server.auth import ApiKeys

    server = LiveServer(engine.settings, ApiKeys.of((KEY,)))
    try:
        with Client(server.url, api_key=KEY) as client:
            docs = HybridRagRetriever(client=client, k=3, group="file").invoke(QUESTION)
    finally:
        server.stop()
    metas, texts = [d.metadata for d in docs], [d.page_content for d in docs]
    _check([d.id for d in docs], metas, texts, _expected(engine))
