"""The roles and folders an index finds by BM25 only (``ingest.embed_never``, or a BM25-first
ingest still filling in) are said by ``hybrid-rag status`` and ``stats`` too, not only by query
answers: the same ``not_dense`` line in ``status`` (text and ``--json``), ``stats`` (text and
``--json``), GET /v1/status, GET /v1/stats and the MCP ``status`` and ``stats`` tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from live_server import LiveServer, server_settings
from not_dense_tree import LINE, serving, write_tree

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    with serving(tmp_path) as server:
        yield server


def test_status_and_stats_say_what_is_bm25_only_on_every_surface(
    live: LiveServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    from hybrid_rag.server.mcp import build_server

    with live.client() as http:
        status = http.get("/v1/status").json()
        stats = http.get("/v1/stats").json()
    assert status["not_dense"] == LINE and status["clean"]  # up to date on disk, and still BM25-only there
    assert stats["not_dense"] == LINE
    service = live.app.state.service
    server = build_server(service.settings, service.engine)
    for tool in ("status", "stats"):
        found = anyio.run(lambda t=tool: server.call_tool(t, {})).structured_content
        assert found["not_dense"] == LINE, tool
    data = ["--data-dir", str(service.settings.data_dir)]
    live.stop()  # the CLI opens the data dir itself
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.setenv("HYBRID_RAG_INGEST__EMBED_NEVER", '["vendored", "generated"]')
    for command in ("status", "stats"):
        assert main([*data, command, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["not_dense"] == LINE, command
        assert main([*data, command]) == 0
        assert LINE in capsys.readouterr().out, command


def test_a_fully_dense_index_says_nothing_is_bm25_only(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_tree(repo)
    engine = Engine(server_settings(tmp_path))
    engine.ingest([repo])
    assert "not_dense" not in engine.disk_status().to_dict()
    assert "not_dense" not in engine.stats().to_dict()
    engine.close()
