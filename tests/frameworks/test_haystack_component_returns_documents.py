"""The Haystack component runs in a real Pipeline, returns {"documents": [...]} with scores and
citations, takes filters and top_k at run time, runs async, and serializes on a data dir."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

pytest.importorskip("haystack")
import haystack
from framework_corpus import QUESTION
from haystack import Document, Pipeline

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.integrations.haystack import HybridRagRetriever

LOADS_ARGS = inspect.signature(Pipeline.loads).parameters


def test_a_pipeline_gets_the_engine_ranking(shared_engine: Engine) -> None:
    pipeline = Pipeline()
    pipeline.add_component("retriever", HybridRagRetriever(shared_engine, top_k=3))
    docs = pipeline.run({"retriever": {"query": QUESTION}})["retriever"]["documents"]
    result = shared_engine.query(QUESTION, top_k=3)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == [str(c.id) for c in result.chunks]
    assert [d.score for d in docs] == pytest.approx([c.score for c in result.chunks])
    assert docs[0].content == result.chunks[0].text
    assert docs[0].meta["citation"] == result.chunks[0].citation
    assert docs[0].meta["breakdown"] == pytest.approx(dict(result.chunks[0].breakdown))


def test_run_time_filters_and_top_k_replace_the_components(shared_engine: Engine) -> None:
    retriever = HybridRagRetriever(shared_engine, top_k=1, filters="source_type=text")
    assert len(retriever.run(QUESTION)["documents"]) == 1
    docs = retriever.run(QUESTION, filters={"source_type": "code"}, top_k=3, features={"mmr": True})[
        "documents"
    ]
    assert len(docs) == 3 and {d.meta["source_type"] for d in docs} == {"code"}
    assert all("mmr_rank" in d.meta["breakdown"] for d in docs)
    with pytest.raises(InputError):
        retriever.run(QUESTION, filters="no_such_field=1")


def test_a_pipeline_run_async_gets_the_same_documents(shared_engine: Engine) -> None:
    pipeline = getattr(haystack, "AsyncPipeline", Pipeline)()  # Haystack 3: any Pipeline runs async
    pipeline.add_component("retriever", HybridRagRetriever(shared_engine, top_k=2))
    out = asyncio.run(pipeline.run_async({"retriever": {"query": QUESTION}}))
    sync = HybridRagRetriever(shared_engine, top_k=2).run(QUESTION)
    assert [d.id for d in out["retriever"]["documents"]] == [d.id for d in sync["documents"]]


def test_a_pipeline_on_a_data_dir_round_trips_through_yaml(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    pipeline = Pipeline()
    pipeline.add_component("retriever", HybridRagRetriever(data_dir=store_dir, top_k=2, mode="bm25"))
    trusted = {"allowed_modules": [HybridRagRetriever.__module__]}  # Haystack 3's allowlist
    loaded = Pipeline.loads(pipeline.dumps(), **(trusted if "allowed_modules" in LOADS_ARGS else {}))
    docs = loaded.run({"retriever": {"query": QUESTION}})["retriever"]["documents"]
    assert len(docs) == 2 and all("dense" not in d.meta["breakdown"] for d in docs)
