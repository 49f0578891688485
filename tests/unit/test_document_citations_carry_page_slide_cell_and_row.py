"""A converted document is stored as its converted text: quotes are exact lines of it (never the
original bytes), each citation carries the native place (``manual.pdf:3-3 (p.2)``), ``context
--json`` quotes have ``page`` / ``slide`` / ``cell`` / ``sheet`` + ``row`` fields, filters take
them (``page>=2``); a changed PDF is converted and embedded again alone, and an unchanged one is
read from the conversion cache, never converted again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import document_files as make
import pytest
from fake_settings import fake_settings

import hybrid_rag.ingest.converters.cache as conversion_cache
from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.locators import chunk_meta, fields, label
from hybrid_rag.settings import Settings
from hybrid_rag.types import Locator

PAGES = [
    "Turbine blades are cooled by film holes\nalong the leading edge of each blade.",
    "Boundary layer transition happens early\nwhen the free stream is turbulent.",
    "Compost improves drainage in clay soil\nand earthworms thrive in it.",
]


def settings(tmp_path: Path) -> Settings:
    """The fake embedder, and chunks of about a page (so a quote of page 2 is cited as p.2)."""
    return fake_settings(tmp_path / "data", {"chunking.min_tokens": 8, "chunking.max_tokens": 20})


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "manual.pdf").write_bytes(make.pdf(PAGES))
    (root / "deck.pptx").write_bytes(
        make.pptx([("Intro", "welcome everyone", ""), ("Soil", "clay soil drains badly", "")])
    )
    (root / "nb.ipynb").write_bytes(
        make.notebook([("markdown", "# Setup", ""), ("code", "drain = clay * 2", "")])
    )
    (root / "costs.xlsx").write_bytes(make.xlsx({"Q1": [["item", "cost"], ["shovel", 20], ["compost", 35]]}))
    return root


def quotes_for(engine: Engine, query: str, **kwargs: object) -> list[dict]:
    context, _ = engine.context(query, max_tokens=2000, **kwargs)
    return [q.to_dict() for q in context.quotes]


def test_quotes_are_exact_lines_of_the_stored_text_with_their_page(tmp_path: Path, folder: Path) -> None:
    engine = Engine(settings(tmp_path))
    try:
        engine.ingest([folder])
        quotes = quotes_for(engine, "boundary layer transition turbulent", filters="path~*.pdf")
        assert quotes
        stored = engine.store.chunks(engine.store.all_chunk_ids().tolist())
        (folder / "manual.pdf").write_bytes(b"not read again for quotes")
        again = quotes_for(engine, "boundary layer transition turbulent", filters="path~*.pdf")
        assert again == quotes
        for q in quotes:
            chunk = stored[q["chunk_id"]]
            lines = chunk.text.split("\n")
            lo = q["start_line"] - chunk.start_line
            assert q["text"] == "\n".join(lines[lo : lo + q["end_line"] - q["start_line"] + 1])
        top = next(q for q in quotes if "Boundary layer" in q["text"])
        assert top["page"] == 2 and top["locator"] == "p.2"
        context, _ = engine.context(
            "boundary layer transition turbulent", max_tokens=2000, filters="path~*.pdf"
        )
        assert f"manual.pdf:{top['start_line']}-{top['end_line']} (p.2)" in context.render()
    finally:
        engine.close()


def test_slides_cells_and_rows_are_cited(tmp_path: Path, folder: Path) -> None:
    engine = Engine(settings(tmp_path))
    try:
        engine.ingest([folder])
        slide = quotes_for(engine, "clay soil drains badly", filters="path~*.pptx")
        assert any(q.get("slide") == 2 and "clay soil" in q["text"] for q in slide)
        cell = quotes_for(engine, "drain clay", filters="path~*.ipynb")
        assert any(q.get("cell") == 2 for q in cell)
        row = quotes_for(engine, "compost cost", filters="path~*.xlsx")
        compost = next(q for q in row if "compost" in q["text"])
        assert compost["sheet"] == "Q1" and compost["row"] <= 3 <= compost.get("row_end", compost["row"])
        assert compost["locator"].startswith("Q1 row")  # "Q1 row 3" or "Q1 rows 2-3"
    finally:
        engine.close()


def test_filters_take_page_and_slide(tmp_path: Path, folder: Path) -> None:
    engine = Engine(settings(tmp_path))
    try:
        engine.ingest([folder])
        late = engine.query("turbine blades film holes boundary compost", top_k=20, filters="page>=2")
        assert late.chunks and all(c.chunk.meta["page"] >= 2 for c in late.chunks)
        slides = engine.query("soil", top_k=20, filters=["slide = 2"])
        assert slides.chunks and {Path(c.path).name for c in slides.chunks} == {"deck.pptx"}
    finally:
        engine.close()


def test_context_json_from_the_cli_has_the_page(
    tmp_path: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {
        "EMBEDDING__MODEL": "fake",
        "CHUNKING__MIN_TOKENS": "8",
        "CHUNKING__MAX_TOKENS": "20",
    }.items():
        monkeypatch.setenv(f"HYBRID_RAG_{key}", value)
    env = ["--data-dir", str(tmp_path / "data")]
    assert main([*env, "ingest", str(folder)]) == 0
    capsys.readouterr()
    assert main([*env, "context", "compost drainage clay", "--json", "--filter", "path~*.pdf"]) == 0
    out = json.loads(capsys.readouterr().out)
    quotes = out["quotes"]
    assert quotes and all(q["page"] in (1, 2, 3) for q in quotes)
    assert any(q["page"] == 3 and "Compost" in q["text"] for q in quotes)


def test_a_changed_pdf_alone_is_converted_again_and_a_rebuild_reads_the_cache(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = conversion_cache.convert

    def counting(name: str, raw: bytes, cfg: object) -> object:
        calls.append(Path(name).name)
        return real(name, raw, cfg)  # type: ignore[arg-type]

    monkeypatch.setattr(conversion_cache, "convert", counting)
    engine = Engine(settings(tmp_path))
    try:
        engine.ingest([folder])
        assert sorted(calls) == ["costs.xlsx", "deck.pptx", "manual.pdf", "nb.ipynb"]
        calls.clear()
        (folder / "manual.pdf").write_bytes(make.pdf([*PAGES, "A fourth page about violins."]))
        report = engine.ingest([folder])
        assert [Path(p).name for p in report.plan.changed] == ["manual.pdf"]
        assert not report.plan.added and report.files_written == 1
        assert calls == ["manual.pdf"]  # once: the plan's read converts, the write's read hits the cache
        calls.clear()
    finally:
        engine.close()
    for store in (tmp_path / "data").glob("*.sqlite*"):  # a new store (and so no live index:
        store.unlink()  # a store gone under a live index is refused), the conversion cache kept
    shutil.rmtree(tmp_path / "data" / "indices")
    engine = Engine(settings(tmp_path))
    try:
        engine.ingest([folder])
        assert calls == []
        assert len(engine.documents()) == 4
    finally:
        engine.close()


def test_a_chunk_over_two_pages_has_the_first_and_the_range() -> None:
    locators = [Locator(1, "page", 1), Locator(5, "page", 2), Locator(9, "page", 3)]
    meta = chunk_meta(locators, 3, 6)
    assert (meta["page"], meta["page_end"]) == (1, 2)
    assert label(fields(locators, 3, 6)) == "pp.1-2"
    assert fields(locators, 5, 8) == {"page": 2}
    rows = [Locator(1, "row", 2, "Q1", 1), Locator(4, "row", 2, "Q2", 1)]
    assert label(fields(rows, 2, 2)) == "Q1 row 3"
    assert label(fields(rows, 2, 4)) == "Q1 row 3 - Q2 row 2"


def test_query_output_and_framework_documents_cite_the_page(
    tmp_path: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `query` printed `manual.pdf:5-6` and a framework document's citation had no page either
    from hybrid_rag.integrations.source import hit_metadata

    small = {"EMBEDDING__MODEL": "fake", "CHUNKING__MIN_TOKENS": "8", "CHUNKING__MAX_TOKENS": "20"}
    for key, value in small.items():
        monkeypatch.setenv(f"HYBRID_RAG_{key}", value)
    env = ["--data-dir", str(tmp_path / "data")]
    assert main([*env, "ingest", str(folder)]) == 0
    capsys.readouterr()
    assert main([*env, "query", "compost drainage clay", "--filter", "page=3", "--mode", "bm25"]) == 0
    out = capsys.readouterr().out
    assert "] manual.pdf:" in out and " (p.3)  score=" in out
    engine = Engine(settings(tmp_path))
    try:
        hit = engine.query("compost", top_k=1, filters="page=3").chunks[0].to_dict()
    finally:
        engine.close()
    assert hit_metadata(hit, 1)["citation"].endswith(f":{hit['start_line']}-{hit['end_line']} (p.3)")


def test_the_mcp_search_tool_cites_the_page(tmp_path: Path, folder: Path) -> None:
    # the MCP `search` tool gave path:lines alone, where query, context and HTTP name the page
    pytest.importorskip("mcp")
    import anyio

    from hybrid_rag.server.mcp import build_server

    s = settings(tmp_path)
    engine = Engine(s)
    try:
        engine.ingest([folder])
        server = build_server(s, engine)
        args = {"query": "compost", "top_k": 1, "filters": "page=3", "mode": "bm25"}
        found = anyio.run(lambda: server.call_tool("search", args))
    finally:
        engine.close()
    text = json.dumps(found, default=str)
    assert "(p.3)" in text, text
