"""``edges`` per call on every surface that builds a context: ``hybrid-rag context|ask --edges
signatures``, POST /v1/context and /v1/ask ``{"edges": "signatures"}``, MCP ``get_context`` with
``edges``; a bad mode is refused naming the field."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.cli import main
from hybrid_rag.client import Client
from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "references" / "python"
QUESTION = "what does ConnectionPool.take do?"
CALLER = "called by: def run(q: str) -> list[str] (pkg/app.py:6-9)"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    root = tmp_path / "python"
    shutil.copytree(FIXTURES, root)
    settings = server_settings(tmp_path)
    engine = Engine(settings)
    engine.ingest([root])
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    yield server
    server.stop()


def test_the_cli_passes_edges(
    live: LiveServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = ["--data-dir", str(live.app.state.service.settings.data_dir)]
    live.stop()
    assert main([*data, "context", QUESTION, "--edges", "signatures", "--json"]) == 0
    assert CALLER in json.loads(capsys.readouterr().out)["edges"]
    assert main([*data, "ask", QUESTION, "--edges", "signatures"]) == 0
    assert CALLER in capsys.readouterr().out
    assert main([*data, "context", QUESTION]) == 0
    assert CALLER not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*data, "context", QUESTION, "--edges", "graph"])


def test_http_passes_edges(live: LiveServer) -> None:
    with live.client() as http:
        on = http.post("/v1/context", json={"query": QUESTION, "edges": "signatures"}).json()
        off = http.post("/v1/context", json={"query": QUESTION}).json()
        ask = http.post("/v1/ask", json={"query": QUESTION, "edges": "signatures"}).json()
        bad = http.post("/v1/context", json={"query": QUESTION, "edges": "graph"})
    assert CALLER in on["edges"] and CALLER in on["text"]
    assert "edges" not in off
    assert CALLER in ask["context"]["text"]
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "edges"
    with Client(live.url, api_key=KEY) as client:
        assert CALLER in client.context(QUESTION, edges="signatures")["edges"]
        assert CALLER in client.ask(QUESTION, edges="signatures")["context"]["text"]


def test_mcp_get_context_passes_edges(live: LiveServer) -> None:
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from hybrid_rag.server.mcp import build_server

    service = live.app.state.service
    server = build_server(service.settings, service.engine)

    def text(arguments: dict) -> str:
        result = anyio.run(lambda: server.call_tool("get_context", arguments))
        return "".join(getattr(c, "text", "") for c in result.content)

    assert CALLER in text({"query": QUESTION, "edges": "signatures"})
    assert CALLER not in text({"query": QUESTION})
    with pytest.raises(ToolError):
        text({"query": QUESTION, "edges": "graph"})
