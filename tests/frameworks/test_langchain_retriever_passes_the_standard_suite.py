"""The LangChain retriever passes langchain-tests' standard retriever suite (k in the constructor
and in the call, sync and async) and carries filters, mode and features into the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")
from framework_corpus import QUESTION
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError, InputError
from hybrid_rag.integrations.langchain import HybridRagRetriever


@pytest.mark.anyio  # the suite's async test; the sync ones ignore it
class TestStandardSuite(RetrieversIntegrationTests):
    engine: Engine

    @pytest.fixture(autouse=True)
    def _engine(self, shared_engine: Engine) -> None:
        type(self).engine = shared_engine

    @property
    def retriever_constructor(self) -> type[HybridRagRetriever]:
        return HybridRagRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self.engine, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


def test_metadata_holds_the_citation_score_and_breakdown(shared_engine: Engine) -> None:
    docs = HybridRagRetriever(engine=shared_engine, k=3).invoke(QUESTION)
    result = shared_engine.query(QUESTION, top_k=3)
    assert [d.metadata["citation"] for d in docs] == [c.citation for c in result.chunks]
    first, hit = docs[0], result.chunks[0]
    assert isinstance(first, Document) and first.page_content == hit.text and first.id == str(hit.id)
    assert first.metadata["path"] == hit.path
    assert (first.metadata["start_line"], first.metadata["end_line"]) == (hit.start_line, hit.end_line)
    assert first.metadata["score"] == pytest.approx(hit.score)
    assert first.metadata["breakdown"] == pytest.approx(dict(hit.breakdown))
    assert first.metadata["index_version"] == result.index_version


def test_filters_mode_and_features_reach_the_engine(shared_engine: Engine) -> None:
    retriever = HybridRagRetriever(engine=shared_engine, k=6, filters="source_type=code")
    assert {d.metadata["source_type"] for d in retriever.invoke(QUESTION)} == {"code"}
    docs = retriever.invoke(QUESTION, filters="path~**/*.md", mode="bm25", features={"mmr": True})
    assert docs and all(d.metadata["path"].endswith(".md") for d in docs)
    assert all("dense" not in d.metadata["breakdown"] and "mmr_rank" in d.metadata["breakdown"] for d in docs)


def test_engine_errors_come_through_unchanged(shared_engine: Engine) -> None:
    retriever = HybridRagRetriever(engine=shared_engine)
    with pytest.raises(ConfigError, match="unknown feature"):
        retriever.invoke(QUESTION, features={"no_such_stage": True})
    with pytest.raises(InputError):
        retriever.invoke("   ")
    with pytest.raises(TypeError, match="unexpected argument top_k"):
        retriever.invoke(QUESTION, top_k=3)


def test_a_data_dir_opens_its_engine(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    docs = HybridRagRetriever(data_dir=store_dir, k=2).invoke(QUESTION)
    assert len(docs) == 2


def test_exactly_one_source_is_required(shared_engine: Engine, store_dir: Path) -> None:
    with pytest.raises(ValueError, match="give an engine"):
        HybridRagRetriever()
    with pytest.raises(ValueError, match="engine and data_dir"):
        HybridRagRetriever(engine=shared_engine, data_dir=store_dir)
