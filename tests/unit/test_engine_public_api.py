"""Engine, the composition root, through its public API with the fake embedder: open, ingest, query,
context, ask without a generator, documents, delete, stats, versions, rebuild, rollback, and the
errors a user meets first (a query before any ingest, a rebuild of an empty store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError, NoIndexError
from hybrid_rag.tokens import count_tokens


@pytest.fixture
def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus: Path) -> Engine:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.delenv("HYBRID_RAG_CONFIG", raising=False)
    engine = Engine.open(tmp_path / "data")
    engine.ingest([corpus], collection="notes", metadata={"team": "search"})
    yield engine
    engine.close()


def test_open_reads_the_environment_and_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.setenv("HYBRID_RAG_RETRIEVAL__TOP_K", "3")
    engine = Engine.open(tmp_path / "elsewhere")
    try:
        assert engine.settings.data_dir == tmp_path / "elsewhere"
        assert engine.embedder.model_name == "fake-hash" and engine.settings.retrieval.top_k == 3
        assert not (tmp_path / "elsewhere").exists()  # constructing opens nothing
    finally:
        engine.close()


def test_a_query_before_any_ingest_says_to_ingest(engine: Engine) -> None:
    with pytest.raises(NoIndexError, match="hybrid-rag ingest"):
        engine.query("anything")
    with pytest.raises(NoIndexError, match="nothing to rebuild"):
        engine.rebuild()
    assert engine.documents() == [] and engine.stats().chunks == 0 and engine.stats().live_version is None


def test_ingest_then_query_finds_the_file_that_answers(opened: Engine) -> None:
    result = opened.query("area of a circle radius", top_k=2)
    assert result.chunks and result.chunks[0].chunk.path.endswith("src/geometry.py")
    assert result.index_version == opened.stats().live_version == 1
    assert [t.stage for t in result.trace.timings][:1] == ["filter"]
    only_docs = opened.query("soil compost", filters="meta.team = search and source_type = text")
    assert {c.chunk.path.rsplit("/", 1)[-1] for c in only_docs.chunks} == {"garden.md"}


def test_the_context_is_cited_and_within_its_budget(opened: Engine) -> None:
    context, checked = opened.context("how does compost help clay soil?", max_tokens=300)
    assert checked is not None  # features.self_check is on by default for context
    assert context.token_count <= 300 == context.max_tokens
    assert count_tokens(context.render()) == context.token_count
    assert any(s.path.endswith("docs/garden.md") for s in context.sources)
    assert json.loads(json.dumps(context.to_dict()))["max_tokens"] == 300


def test_ask_without_a_generator_gives_the_context_and_no_answer(opened: Engine) -> None:
    answer = opened.ask("how does compost help clay soil?", max_tokens=400)
    assert answer.text is None and answer.error is None and answer.cited == ()
    assert answer.context.sources and answer.context.render() in answer.prompt


def test_documents_delete_and_stats(opened: Engine, corpus: Path) -> None:
    docs = opened.documents()
    assert [Path(d.path).name for d in docs] == ["garden.md", "geometry.py"]
    assert {d.collection for d in docs} == {"notes"} and docs[0].meta == {"team": "search"}
    assert opened.documents(collection="other") == []
    report = opened.delete([docs[0].path])
    assert report.version == 2
    stats = opened.stats()
    assert (stats.documents, stats.live_version) == (1, 2) and stats.chunks == opened.store.chunk_count()
    assert stats.cached_embeddings >= stats.chunks and stats.bytes_on_disk["store"] > 0
    with pytest.raises(InputError, match="no document"):
        opened.delete([docs[0].path])


def test_rebuild_makes_a_new_version_and_rollback_goes_back(opened: Engine) -> None:
    before = opened.query("circle area").chunks
    assert opened.rebuild().version == 2
    assert [v["version"] for v in opened.versions()] == [1, 2]
    assert [v["live"] for v in opened.versions()] == [False, True]
    opened.rollback(1)
    assert opened.stats().live_version == 1 and opened.query("circle area").index_version == 1
    assert [c.chunk.id for c in opened.query("circle area").chunks] == [c.chunk.id for c in before]
    assert [(v.version, v.status) for v in opened.store.index_versions() if v.status == "rolled back to"] == [
        (1, "rolled back to")
    ]
    with pytest.raises(NoIndexError, match="not on disk"):
        opened.rollback(7)


def test_an_unchanged_ingest_writes_nothing_and_makes_no_new_version(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    report = engine.ingest([corpus]).to_dict()
    assert (report["files_written"], report["embedded"], report["index_version"]) == (0, 0, None)
    assert report["unchanged"] == 2 and engine.stats().live_version == 1
