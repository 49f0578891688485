"""An index whose ``ingest.embed_never`` roles are BM25-only says so in every answer: the one line
``not_dense`` in ``query --json`` (and the text output's header), POST /v1/query, and the MCP
``search`` tool, beside the trace's dense note."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from live_server import LiveServer
from not_dense_tree import LINE, serving

from hybrid_rag.cli import main


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    with serving(tmp_path) as server:
        yield server


def test_every_surface_says_what_is_bm25_only(
    live: LiveServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    from hybrid_rag.server.mcp import build_server

    with live.client() as http:
        answer = http.post("/v1/query", json={"query": "vendored_helper bundled six", "top_k": 3}).json()
    assert answer["not_dense"] == LINE and answer["trace"]["not_dense"] == LINE
    assert "dense" not in answer  # complete: nothing more is coming
    assert answer["results"] and "vendored_helper" in answer["results"][0]["text"]  # BM25 finds it
    service = live.app.state.service
    server = build_server(service.settings, service.engine)
    found = anyio.run(lambda: server.call_tool("search", {"query": "pool connections"})).structured_content
    assert found["not_dense"] == LINE
    data = ["--data-dir", str(service.settings.data_dir)]
    live.stop()  # the CLI opens the data dir itself
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.setenv("HYBRID_RAG_INGEST__EMBED_NEVER", '["vendored", "generated"]')
    assert main([*data, "query", "pool connections", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["not_dense"] == LINE
    assert main([*data, "query", "pool connections"]) == 0
    assert f"# {LINE}" in capsys.readouterr().out.splitlines()[:3]
