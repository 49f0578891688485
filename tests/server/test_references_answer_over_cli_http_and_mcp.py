"""``refs``, ``callers``, ``callees`` and ``impact`` over every surface: the CLI (text and
``--json``), GET /v1/refs|callers|callees|impact and the MCP tools answer alike, every definition
cited ``path:start-end`` relative to the ingested root; the routes need the key and name a bad
field; the tools refuse what the routes refuse."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "references" / "python"
RUN = "pkg/app.py:6-9"  # def run(q) ... in tests/fixtures/references/python/pkg/app.py


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


def test_cli_answers_cite_the_definitions(
    live: LiveServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = ["--data-dir", str(live.app.state.service.settings.data_dir)]
    live.stop()  # the CLI opens the data dir itself
    assert main([*data, "callers", "parse_filter"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "callers of function parse_filter  pkg/pool.py:12-13",
        f"{RUN}  function run  (line 9)",
    ]
    assert main([*data, "callers", "parse_filter", "--depth", "2", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["callers"]
    assert [(c["citation"], c["depth"]) for c in found] == [(RUN, 1), ("pkg/app.py:12-13", 2)]
    assert main([*data, "callees", "run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "pkg/pool.py:12-13  function parse_filter  (line 9)" in out
    assert "- basename  (line 9; not in the index)" in out
    assert main([*data, "refs", "ConnectionPool"]) == 0
    out = capsys.readouterr().out
    assert "pkg/app.py:7-7  call ConnectionPool  in run  -> ConnectionPool pkg/pool.py:4-9 (import)" in out
    assert main([*data, "impact", "pkg/pool.py"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "impact of pkg/pool.py (4 definitions, 2 levels)"
    assert out[2].split() == ["3.00", RUN, "function", "run", "(depth", "1,", "3", "uses)"]
    assert main([*data, "callers", "no_such_name"]) == 1
    assert main([*data, "impact", "pkg/nope.py"]) == 2  # neither a file nor a definition: an error
    assert "no document 'pkg/nope.py'" in capsys.readouterr().err
    assert main([*data, "callers", "run", "--depth", "9"]) == 2


def test_http_routes_answer_with_citations(live: LiveServer) -> None:
    with live.client() as http:
        refs = http.get("/v1/refs", params={"name": "parse_filter"}).json()
        callers = http.get("/v1/callers", params={"name": "parse_filter", "depth": 2}).json()
        callees = http.get("/v1/callees", params={"name": "run"}).json()
        impact = http.get("/v1/impact", params={"target": "pkg/pool.py"}).json()
        missing = http.get("/v1/impact", params={"target": "pkg/nope.py"})
        bad = http.get("/v1/callers", params={"name": "run", "depth": 0})
        empty = http.get("/v1/refs", params={"name": ""})
    assert refs["resolved"] == 2 and [g["path"] for g in refs["files"]] == ["pkg/app.py"]
    assert [c["citation"] for c in callers["callers"]] == [RUN, "pkg/app.py:12-13"]
    assert "pkg/pool.py:12-13" in [
        c["definition"]["citation"] for c in callees["callees"] if "definition" in c
    ]
    assert impact["dependents"][0]["citation"] == RUN and impact["files"][0]["path"] == "pkg/app.py"
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "target"
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "depth"
    assert empty.status_code == 422 and empty.json()["error"]["field"] == "name"
    with live.client(key=None) as http:
        assert http.get("/v1/callers", params={"name": "run"}).status_code == 401


def test_mcp_tools_answer_with_citations(live: LiveServer) -> None:
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from hybrid_rag.server.mcp import build_server

    service = live.app.state.service
    server = build_server(service.settings, service.engine)

    def call(name: str, arguments: dict) -> dict:
        return anyio.run(lambda: server.call_tool(name, arguments)).structured_content

    assert [c["citation"] for c in call("callers", {"name": "parse_filter"})["callers"]] == [RUN]
    assert call("find_references", {"name": "parse_filter"})["count"] == 2
    assert call("callees", {"name": "main"})["callees"][0]["definition"]["citation"] == RUN
    assert call("impact", {"target": "parse_filter", "depth": 1})["dependents"][0]["citation"] == RUN
    tools = {t.name: t for t in anyio.run(server.list_tools)}
    assert {"find_references", "callers", "callees", "impact"} <= set(tools)
    assert "path:start-end" in (tools["callers"].description or "")
    for name, arguments in (
        ("callers", {"name": "run", "depth": "2"}),
        ("callers", {"name": "run", "depth": 6}),
        ("find_references", {"name": ""}),
        ("impact", {"target": "pkg/nope.py"}),
        ("callees", {"name": "run", "surprise": 1}),
    ):
        with pytest.raises(ToolError):
            anyio.run(lambda name=name, arguments=arguments: server.call_tool(name, arguments))
