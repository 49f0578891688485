"""The MCP server driven by the SDK's own stdio client, as a desktop agent or an IDE runs it:
``hybrid-rag mcp`` as a subprocess; tools listed, ``search`` and ``get_context`` called."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

mcp = pytest.importorskip("mcp")

from hybrid_rag.engine import Engine  # noqa: E402
from hybrid_rag.settings import Settings  # noqa: E402


def _call(
    data_dir: Path, calls: list[tuple[str, dict]], env: dict[str, str] | None = None
) -> tuple[list, list]:
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "hybrid_rag.cli", "--data-dir", str(data_dir), "mcp"],
        env={
            "HYBRID_RAG_EMBEDDING__MODEL": "fake",
            "HF_HUB_OFFLINE": "1",
            **(env or {}),
            "PATH": os.environ.get("PATH", ""),
        },
    )

    async def session() -> tuple[list, list]:
        async with mcp.Client(params) as client:
            tools = (await client.list_tools()).tools
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return tools, results

    return anyio.run(session)


@pytest.mark.integration
def test_tools_search_and_context_over_stdio(settings: Settings, corpus: Path) -> None:
    engine = Engine(settings)
    engine.ingest([corpus])
    engine.close()
    tools, (search, context, bad) = _call(
        settings.data_dir,
        [
            ("search", {"query": "area of a circle", "top_k": 2}),
            ("get_context", {"query": "how do I improve clay soil?", "max_tokens": 400}),
            ("search", {"query": "circle", "filters": "colour = red"}),
        ],
    )
    names = {t.name for t in tools}
    # ingest_path only with server.mcp_ingest_enabled
    assert names == {
        "search",
        "get_context",
        "list_documents",
        "stats",
        "status",
        "find_symbol",
        "outline",
        "find_references",
        "callers",
        "callees",
        "impact",
    }
    described = {t.name: t.description or "" for t in tools}
    assert "path:start-end" in described["search"] and "[n]" in described["get_context"]
    assert not search.is_error
    found = json.loads(search.content[0].text)["results"]
    assert found[0]["citation"].startswith("src/geometry.py:")  # relative to the ingested root
    assert not context.is_error
    text = context.content[0].text
    assert "[1]" in text and "garden.md" in text and "confidence" in text
    assert bad.is_error and "unknown filter field 'colour'" in bad.content[0].text
