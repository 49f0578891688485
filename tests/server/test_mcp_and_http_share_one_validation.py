"""The MCP tools validate their arguments with the HTTP API's own request models: unknown fields,
``top_k: "5"`` or ``true``, an empty collection and ``limit: -1`` are refused by both, never coerced
or clamped; what the HTTP API takes, the tools take."""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("mcp")
from fake_settings import fake_settings
from mcp.server.mcpserver.exceptions import ToolError

from hybrid_rag.engine import Engine
from hybrid_rag.server.mcp import build_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcp")
    docs = root / "docs"
    docs.mkdir()
    (docs / "soil.md").write_text("# Soil\n\nClay soil holds water; sand drains fast.\n")
    settings = fake_settings(root / "data")
    engine = Engine(settings)
    engine.ingest([docs])
    yield build_server(settings, engine)
    engine.close()


def call(server, name: str, arguments: dict) -> object:
    return anyio.run(lambda: server.call_tool(name, arguments))


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("search", {"query": "soil", "surprise": 1}, "surprise"),
        ("search", {"query": "soil", "top_k": "5"}, "top_k"),
        ("search", {"query": "soil", "top_k": True}, "top_k"),
        ("search", {"query": "soil", "top_k": 0}, "top_k"),
        ("search", {"query": "   "}, "query"),
        ("get_context", {"query": "soil", "max_tokens": -1}, "max_tokens"),
        ("list_documents", {"collection": ""}, "collection"),
        ("list_documents", {"limit": -1}, "limit"),
        ("list_documents", {"limit": 5000}, "limit"),
        ("stats", {"verbose": True}, "verbose"),
    ],
)
def test_the_tools_refuse_what_the_http_api_refuses(server, tool: str, arguments: dict, field: str) -> None:
    with pytest.raises(ToolError, match=field):
        call(server, tool, arguments)


def test_the_tools_take_what_the_http_api_takes(server) -> None:
    found = call(server, "search", {"query": "soil", "top_k": 2.0, "filters": "path ~ '**/*.md'"})
    assert "soil.md" in str(found)
    listed = call(server, "list_documents", {"limit": 1, "offset": 0})
    assert "soil.md" in str(listed)


def test_the_tool_schema_is_the_request_model(server) -> None:
    tools = {t.name: t for t in anyio.run(server.list_tools)}
    schema = tools["search"].input_schema
    assert schema["additionalProperties"] is False
    assert schema["properties"]["top_k"]["anyOf"][0]["minimum"] == 1
    assert tools["list_documents"].input_schema["properties"]["limit"]["maximum"] == 1000


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("search", {"query": "soil", "top_k": "abc"}, "top_k"),
        ("search", {"query": "soil", "surprise": 1}, "surprise"),
        ("get_context", {"query": 5}, "query"),
        ("list_documents", {"limit": "ten"}, "limit"),
    ],
)
def test_a_refusal_is_one_line_naming_the_argument(server, tool: str, arguments: dict, field: str) -> None:
    """Not pydantic's multi-line message with its documentation URL: what an agent can act on."""
    with pytest.raises(ToolError) as refused:
        call(server, tool, arguments)
    message = str(refused.value)
    assert "\n" not in message and "pydantic.dev" not in message and "validation error" not in message
    assert f"argument {field}: " in message, message
