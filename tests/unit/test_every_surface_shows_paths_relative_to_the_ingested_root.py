"""One rule for paths everywhere: ``HybridRetriever.open(...).query(...)`` shows each hit's path and
citation relative to the ingested root, as ``Engine.query`` (and so the CLI, HTTP, MCP) does;
``absolute_paths=True`` shows the stored path, as the Engine's flag does."""

from __future__ import annotations

from pathlib import Path

import pytest

QUESTION = "which soil drains fast?"


def test_the_opened_retriever_cites_as_the_engine_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hybrid_rag import Engine, HybridRetriever, load_settings

    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data, docs = tmp_path / "data", tmp_path / "docs"
    (docs / "garden").mkdir(parents=True)
    (docs / "garden" / "soil.md").write_text("# Soil\n\nClay soil holds water; sand drains fast.\n")
    (docs / "notes.md").write_text("# Notes\n\nCompost the leaves in autumn.\n")
    engine = Engine(load_settings(data_dir=data))
    engine.ingest([docs])
    expected = engine.query(QUESTION, top_k=2)
    absolute = engine.query(QUESTION, top_k=2, absolute_paths=True)
    engine.close()
    retriever = HybridRetriever.open(data)
    result = retriever.query(QUESTION, top_k=2)
    assert [c.citation for c in result.chunks] == [c.citation for c in expected.chunks]
    assert result.chunks[0].citation.startswith("garden/soil.md:")
    assert [c.to_dict()["path"] for c in result.chunks] == [c.path for c in expected.chunks]
    stored = retriever.query(QUESTION, top_k=2, absolute_paths=True)
    assert [c.citation for c in stored.chunks] == [c.citation for c in absolute.chunks]
    assert stored.chunks[0].path == str(docs / "garden" / "soil.md")
