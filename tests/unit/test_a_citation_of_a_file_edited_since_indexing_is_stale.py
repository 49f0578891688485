"""A file edited or deleted on disk after it was indexed is marked in every answer that cites it
(``stale``: "changed" or "missing"; ``ingest/freshness.py``), on the engine, the CLI (a line and
``--json``) and MCP; an unchanged file, a ``touch``ed one and documents that are no files (zip
members, in-memory texts) never are."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import anyio
import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.ingest.loaders import load_text

QUESTIONS = (
    "circle area radius",
    "parse a configuration file",
    "tomatoes full sun watering",
    "compost drainage clay soil",
    "earthworms organic matter",
    "geometry helpers math",
)


def _answers(engine: Engine) -> list:
    return [sc for q in QUESTIONS for sc in engine.query(q, top_k=4).chunks]


def test_every_answer_citing_an_edited_file_is_stale_and_no_other(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    assert not any(sc.stale for sc in _answers(engine))  # nothing moved yet
    garden = corpus / "docs" / "garden.md"
    garden.write_text(garden.read_text() + "\nA line added after the ingest.\n")
    answers = _answers(engine)
    citing = [sc for sc in answers if sc.path == "docs/garden.md"]
    others = [sc for sc in answers if sc.path != "docs/garden.md"]
    assert citing and others
    assert all(sc.stale == "changed" for sc in citing)  # 100% of them
    assert not any(sc.stale for sc in others)
    row = citing[0].to_dict()
    assert row["stale"] is True and row["stale_reason"] == "changed"
    assert others[0].to_dict()["stale"] is False
    assert citing[0].stale_note == (
        "stale: docs/garden.md changed on disk since indexed; run hybrid-rag ingest"
    )
    (corpus / "src" / "geometry.py").unlink()
    gone = [sc for sc in _answers(engine) if sc.path == "src/geometry.py"]
    assert gone and all(sc.stale == "missing" for sc in gone)
    engine.ingest([corpus])  # indexed again: nothing is stale
    assert not any(sc.stale for sc in _answers(engine))


def test_an_edit_that_keeps_the_size_is_found_by_its_hash(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    garden = corpus / "docs" / "garden.md"
    text = garden.read_text()
    garden.write_text(text.replace("Tomatoes", "Potatoes"))  # same size, new bytes
    before = os.stat(garden)
    os.utime(garden, ns=(before.st_atime_ns, before.st_mtime_ns + 5_000_000_000))
    hits = [sc for sc in _answers(engine) if sc.path == "docs/garden.md"]
    assert hits and all(sc.stale == "changed" for sc in hits)


def test_a_touched_file_is_not_stale_even_with_attached_metadata(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus], metadata={"team": "search"})
    for path in (corpus / "docs" / "garden.md", corpus / "src" / "geometry.py"):
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))
    answers = _answers(engine)
    assert answers and not any(sc.stale for sc in answers)
    hashed = engine.freshness.hashed
    assert hashed == 2  # the two touched files, each read once
    _answers(engine)
    assert engine.freshness.hashed == hashed  # cached per (path, size, mtime_ns)


def test_zip_members_and_in_memory_texts_are_never_stale(engine: Engine, tmp_path: Path) -> None:
    archive = tmp_path / "notes.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("soil.md", "# Soil\n\nCompost improves drainage in heavy clay soil.\n")
    archive.write_bytes(buffer.getvalue())
    engine.ingest([archive])
    engine.ingestor.ingest_files([load_text("doc-1", "Tomatoes need full sun and watering.")])
    for _ in ("the archive in place", "the archive deleted"):
        answers = [sc for q in ("clay soil drainage", "tomatoes sun") for sc in engine.query(q).chunks]
        assert {sc.path for sc in answers} >= {"doc-1"} and len(answers) >= 2
        assert not any(sc.stale for sc in answers)
        archive.unlink(missing_ok=True)


def test_the_cli_and_mcp_show_it(
    settings, corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--data-dir", str(settings.data_dir)]
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    engine = Engine(settings)
    try:
        engine.ingest([corpus])
        garden = corpus / "docs" / "garden.md"
        garden.write_text(garden.read_text() + "\nMore.\n")
        from hybrid_rag.server.mcp import build_server

        server = build_server(settings, engine)
        found = anyio.run(lambda: server.call_tool("search", {"query": "tomatoes full sun", "top_k": 3}))
    finally:
        engine.close()
    text = str(found)
    assert '"stale": true' in text.lower() or "'stale': True" in text
    capsys.readouterr()
    assert main([*args, "query", "tomatoes full sun", "--top-k", "3"]) == 0
    out = capsys.readouterr().out
    assert "stale: docs/garden.md changed on disk since indexed; run hybrid-rag ingest" in out
    assert main([*args, "query", "tomatoes full sun", "--top-k", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["stale"] for r in rows if r["path"] == "docs/garden.md"] == [True] * sum(
        r["path"] == "docs/garden.md" for r in rows
    )
    assert any(r["path"] == "docs/garden.md" for r in rows)


def test_context_quotes_of_an_edited_file_are_stale(
    settings, corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    engine = Engine(settings)
    engine.ingest([corpus])
    garden = corpus / "docs" / "garden.md"
    garden.write_text(garden.read_text() + "\nEdited.\n")
    context, _ = engine.context("tomatoes full sun compost soil", max_tokens=2000)
    engine.close()
    quotes = context.to_dict()["quotes"]
    edited = [q for q in quotes if q["path"] == "docs/garden.md"]
    assert edited and all(q["stale"] is True and q["stale_reason"] == "changed" for q in edited)
    assert all(q["stale"] is False for q in quotes if q["path"] != "docs/garden.md")
    capsys.readouterr()
    args = ["--data-dir", str(settings.data_dir)]
    assert main([*args, "context", "tomatoes full sun compost soil", "--max-tokens", "2000"]) == 0
    err = capsys.readouterr().err
    assert "# stale: docs/garden.md changed on disk since indexed; run hybrid-rag ingest" in err


def test_the_opened_retriever_marks_it_too(settings, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hybrid_rag import HybridRetriever

    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    engine = Engine(settings)
    engine.ingest([corpus])
    engine.close()
    (corpus / "src" / "geometry.py").write_text("print('rewritten')\n")
    hits = HybridRetriever.open(settings.data_dir).query("circle area radius", top_k=4).chunks
    cited = [sc for sc in hits if sc.path == "src/geometry.py"]
    assert cited and all(sc.stale == "changed" for sc in cited)
