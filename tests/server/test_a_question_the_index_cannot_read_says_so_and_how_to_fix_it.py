"""A Russian question over an English folder whose dense model reads English only (MiniLM, what
``embedding.model: auto`` gives English text) cannot be answered: neither stage reads it. The
answer says so, and how to fix it, in one field the engine produces (``trace.unread``) that every
surface shows: the CLI's text and ``--json``, HTTP and MCP. An English question is answered as
before. The dense model is the hash embedder under MiniLM's name (its languages are MiniLM's)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag import cli
from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.server.auth import ApiKeys
from hybrid_rag.server.mcp import build_server

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
QUESTION = "как сбросить пароль"
LACKS = (
    "this index cannot read questions in ru: its dense model sentence-transformers/all-MiniLM-L6-v2 "
    "reads English only, and its text (en"
)
FIX = "`HYBRID_RAG_EMBEDDING__MODEL=multilingual-e5-small hybrid-rag rebuild`"


def english_folder(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "docs" / "operations.md").write_text(
        "# Operations\n\n## Password resets\n\nTo reset a user's password, open the admin console, find "
        "the account and press Reset password. The user gets an email with a link that expires in "
        "one hour.\n\n## Backups\n\nThe database is backed up every night to the object store and "
        "kept for thirty days.\n",
        encoding="utf-8",
    )
    (root / "src" / "geometry.py").write_text(
        '"""Geometry helpers for the drawing tools."""\n\nimport math\n\n\n'
        "def circle_area(radius: float) -> float:\n"
        '    """Area of a circle of the given radius."""\n'
        "    return math.pi * radius * radius\n",
        encoding="utf-8",
    )
    return root


@pytest.fixture
def minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hybrid_rag.engine.make_embedder", lambda s: FakeEmbedder(64, model_name=MINILM))


def test_the_engine_says_what_the_index_lacks_and_the_fix(minilm: None, tmp_path: Path) -> None:
    engine = Engine(server_settings(tmp_path))
    try:
        engine.ingest([english_folder(tmp_path / "corpus")])
        result = engine.query(QUESTION)
        assert result.chunks  # still answered: a warning, not an empty result
        assert result.trace.unread.startswith(LACKS) and FIX in result.trace.unread
        assert "shares almost no words with it (BM25 cannot match it)" in result.trace.unread
        assert result.to_dict()["unread"] == result.trace.unread
        context, _ = engine.context(QUESTION)
        assert context.weak_evidence and result.trace.unread in context.notes
        assert result.trace.unread in context.render()

        english = engine.query("how do I reset a user's password")
        assert english.trace.unread == "" and "unread" not in english.to_dict()
        assert Path(english.chunks[0].chunk.path).name == "operations.md"
    finally:
        engine.close()


def test_the_cli_shows_it_before_the_results_and_in_json(
    minilm: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    assert cli.main(["--data-dir", data, "ingest", str(english_folder(tmp_path / "corpus"))]) == 0
    capsys.readouterr()
    cli.main(["--data-dir", data, "query", QUESTION])
    out = capsys.readouterr().out
    warning = next(line for line in out.splitlines() if line.startswith("# warning: "))
    assert LACKS in warning and FIX in warning
    assert out.index("# warning: ") < out.index("[1] ")
    cli.main(["--data-dir", data, "query", QUESTION, "--json"])
    assert json.loads(capsys.readouterr().out)["unread"].startswith(LACKS)


def test_http_and_mcp_return_it(minilm: None, tmp_path: Path) -> None:
    settings = server_settings(tmp_path)
    engine = Engine(settings)
    engine.ingest([english_folder(tmp_path / "corpus")])
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    try:
        with server.client() as client:
            found = client.post("/v1/query", json={"query": QUESTION, "top_k": 3}).json()
            assert found["unread"].startswith(LACKS) and FIX in found["unread"]
            context = client.post("/v1/context", json={"query": QUESTION}).json()
            assert context["trace"]["unread"].startswith(LACKS) and context["weak_evidence"]
        mcp = build_server(settings, engine)
        searched = anyio.run(lambda: mcp.call_tool("search", {"query": QUESTION}))
        assert LACKS in str(searched) and "HYBRID_RAG_EMBEDDING__MODEL=multilingual-e5-small" in str(searched)
        evidence = anyio.run(lambda: mcp.call_tool("get_context", {"query": QUESTION}))
        assert LACKS in str(evidence)
    finally:
        server.stop()
        engine.close()


def test_the_page_shows_it_above_the_notes() -> None:
    import hybrid_rag.server

    script = (Path(hybrid_rag.server.__file__).parent / "static" / "app.js").read_text()
    assert 'data.unread ? [el("div", { class: "error", text: `warning: ${data.unread}` })]' in script


def test_a_short_russian_question_no_detector_is_sure_of_is_warned_by_its_script(
    minilm: None, tmp_path: Path
) -> None:
    engine = Engine(server_settings(tmp_path))
    try:
        engine.ingest([english_folder(tmp_path / "corpus")])
        result = engine.query("объясни код")
        assert result.lang == "und"
        assert result.trace.unread.startswith(
            "this index cannot read questions in Cyrillic script: its dense model "
            "sentence-transformers/all-MiniLM-L6-v2 reads English only"
        )
        assert FIX in result.trace.unread
        assert engine.query("explain circle_area").trace.unread == ""  # Latin letters: read as before
    finally:
        engine.close()
