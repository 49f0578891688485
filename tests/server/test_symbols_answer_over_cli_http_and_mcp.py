"""``find_symbol`` and ``outline`` over every surface: ``hybrid-rag symbols`` / ``outline``, GET
/v1/symbols and /v1/outline, and the MCP tools each answer with the definition cited
``path:start-end`` (paths relative to the ingested root, as results show them); the routes need
the key and name a bad field; the tools refuse what the routes refuse."""

from __future__ import annotations

import json

import anyio
import pytest
from live_server import LiveServer

from hybrid_rag.cli import main

CIRCLE = "src/geometry.py:6-8"  # def circle_area ... return, in tests/conftest.py's PY_SOURCE


def test_cli_symbols_and_outline_cite_the_definition(
    live: LiveServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = ["--data-dir", str(live.app.state.service.settings.data_dir)]
    live.stop()  # the CLI opens the data dir itself
    assert main([*data, "symbols", "circle_area"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{CIRCLE}  function circle_area  (exact)"
    assert "Area of a circle of the given radius." in out
    assert main([*data, "symbols", "circl_area", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["symbols"]
    assert found[0]["citation"] == CIRCLE and found[0]["match"] == "fuzzy"
    assert main([*data, "outline", "src/geometry.py"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"function circle_area  {CIRCLE}",
        "function parse_config_file  src/geometry.py:11-18",
    ]
    assert main([*data, "symbols", "no_such_name"]) == 1
    capsys.readouterr()
    assert main([*data, "symbols", "circle_area", "--kind", "methd"]) == 2  # not "nothing found"
    err = capsys.readouterr().err
    assert "unknown kind 'methd'; valid kinds: class, constant" in err and len(err.strip().splitlines()) == 1


def test_http_routes_answer_with_citations(live: LiveServer) -> None:
    with live.client() as http:
        found = http.get("/v1/symbols", params={"name": "circle_area"}).json()
        outline = http.get("/v1/outline", params={"path": "src/geometry.py"}).json()
        missing = http.get("/v1/outline", params={"path": "src/nope.py"})
        bad = http.get("/v1/symbols", params={"name": "x", "limit": 0})
        mode = http.get("/v1/symbols", params={"name": "x", "mode": "regex"})
        kind = http.get("/v1/symbols", params={"name": "x", "kind": ["method", "methd"]})
    assert [s["citation"] for s in found["symbols"]] == [CIRCLE]
    assert [s["name"] for s in outline["symbols"]] == ["circle_area", "parse_config_file"]
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "path"
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "limit"
    assert mode.status_code == 422 and mode.json()["error"]["field"] == "mode"
    assert kind.status_code == 422 and kind.json()["error"]["field"] == "kind"
    assert "valid kinds: class, constant" in kind.json()["error"]["message"]
    with live.client(key=None) as http:
        assert http.get("/v1/symbols", params={"name": "circle_area"}).status_code == 401


def test_mcp_tools_answer_with_citations(live: LiveServer) -> None:
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from hybrid_rag.server.mcp import build_server

    service = live.app.state.service
    server = build_server(service.settings, service.engine)

    def call(name: str, arguments: dict) -> dict:
        return anyio.run(lambda: server.call_tool(name, arguments)).structured_content

    assert call("find_symbol", {"name": "parse_config_file"})["symbols"][0]["citation"] == (
        "src/geometry.py:11-18"
    )
    tree = call("outline", {"path": "src/geometry.py"})["symbols"]
    assert [(n["name"], n["citation"]) for n in tree] == [
        ("circle_area", CIRCLE),
        ("parse_config_file", "src/geometry.py:11-18"),
    ]
    for name, arguments in (
        ("find_symbol", {"name": "x", "limit": "5"}),
        ("find_symbol", {"name": ""}),
        ("outline", {"path": "src/geometry.py", "surprise": 1}),
        ("outline", {"path": "src/nope.py"}),
    ):
        with pytest.raises(ToolError):
            anyio.run(lambda name=name, arguments=arguments: server.call_tool(name, arguments))
    with pytest.raises(ToolError, match=r"unknown kind 'methd'; valid kinds: class, [a-z, ]+$"):
        anyio.run(lambda: server.call_tool("find_symbol", {"name": "x", "kind": ["methd"]}))


def test_the_tools_are_listed_for_agents(live: LiveServer) -> None:
    pytest.importorskip("mcp")
    from hybrid_rag.server.mcp import build_server

    service = live.app.state.service
    tools = anyio.run(build_server(service.settings, service.engine).list_tools)
    names = {t.name for t in tools}
    assert {"find_symbol", "outline"} <= names
