"""POST /v1/query results carry the engine's ``stale`` flag: a file edited on disk
after it was indexed is marked in every result citing it, the others are not; GET /v1/status and
the MCP tool ``status`` list what changed on disk, as ``hybrid-rag status --json``."""

from __future__ import annotations

from pathlib import Path

import anyio
from live_server import LiveServer

from hybrid_rag.engine import Engine
from hybrid_rag.server.mcp import build_server


def test_http_results_carry_stale(live: LiveServer, corpus: Path) -> None:
    garden = corpus / "docs" / "garden.md"
    garden.write_text(garden.read_text() + "\nEdited after the ingest.\n")
    with live.client() as client:
        rows = client.post("/v1/query", json={"query": "garden soil tomatoes", "top_k": 5}).json()["results"]
    edited = [r for r in rows if r["path"] == "docs/garden.md"]
    others = [r for r in rows if r["path"] != "docs/garden.md"]
    assert edited and others
    assert all(r["stale"] is True and r["stale_reason"] == "changed" for r in edited)
    assert all(r["stale"] is False and "stale_reason" not in r for r in others)


def test_http_and_mcp_status_list_what_changed(live: LiveServer, corpus: Path) -> None:
    (corpus / "docs" / "garden.md").write_text("# Gardening notes\n\nRewritten.\n")
    (corpus / "src" / "shapes.py").write_text("def square(side):\n    return side * side\n")
    with live.client() as client:
        found = client.get("/v1/status")
    assert found.status_code == 200, found.text
    data = found.json()
    assert data["changed"] == ["docs/garden.md"] and data["new"] == ["src/shapes.py"]
    assert data["deleted"] == [] and data["unchanged"] == 1


def test_the_mcp_status_tool_lists_what_changed(settings, corpus: Path) -> None:
    engine = Engine(settings)
    try:
        engine.ingest([corpus])
        (corpus / "docs" / "garden.md").write_text("# Gardening notes\n\nRewritten.\n")
        server = build_server(settings, engine)
        text = str(anyio.run(lambda: server.call_tool("status", {})))
    finally:
        engine.close()
    assert "docs/garden.md" in text and "1 changed, 0 new, 0 deleted" in text
