"""``hybrid-rag mcp --transport http``: streamable HTTP at /mcp behind the same bearer keys as the
HTTP API; the SDK's own client lists the tools and searches with the key, and is refused without."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn

mcp = pytest.importorskip("mcp")
httpx2 = pytest.importorskip("httpx2")

from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from hybrid_rag.engine import Engine  # noqa: E402
from hybrid_rag.server.auth import ApiKeys, require_bearer  # noqa: E402
from hybrid_rag.server.mcp import build_server  # noqa: E402
from hybrid_rag.settings import Settings  # noqa: E402

KEY = "mcp-http-key-0123456789abcdef"


@pytest.mark.integration
def test_streamable_http_with_and_without_the_key(settings: Settings, corpus: Path) -> None:
    engine = Engine(settings)
    engine.ingest([corpus])
    app = require_bearer(
        build_server(settings, engine).streamable_http_app(host="127.0.0.1"), ApiKeys.of((KEY,))
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        time.sleep(0.02)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/mcp"
    try:
        denied = httpx.post(url, json={})
        assert denied.status_code == 401 and denied.json()["error"]["field"] == "Authorization"

        async def session() -> tuple[set[str], str]:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"})
            async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                found = await client.call_tool("search", {"query": "area of a circle", "top_k": 1})
                return tools, found.content[0].text

        tools, text = anyio.run(session)
        assert tools == {
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
        assert "geometry.py" in text
    finally:
        server.should_exit = True
        thread.join(10)
        engine.close()
