"""GET /v1/documents and the MCP tool list_documents show paths by the one rule of every other
answer (hybrid_rag/paths.py): relative to the ingested root, given as `root`; `absolute_paths`
gives the stored paths; DELETE /v1/documents/{path} takes either form."""

from __future__ import annotations

import anyio
from live_server import LiveServer

from hybrid_rag.engine import Engine
from hybrid_rag.server.mcp import build_server


def test_the_list_shows_what_results_show_and_delete_takes_it(live: LiveServer, corpus) -> None:
    with live.client() as client:
        hit = client.post("/v1/query", json={"query": "garden soil", "top_k": 5}).json()["results"]
        listed = client.get("/v1/documents").json()
        assert listed["root"] == str(corpus)
        paths = sorted(d["path"] for d in listed["documents"])
        assert paths == ["docs/garden.md", "src/geometry.py"]
        assert {h["path"] for h in hit} <= set(paths)
        stored = client.get("/v1/documents", params={"absolute_paths": True}).json()
        assert sorted(d["path"] for d in stored["documents"]) == [str(corpus / p) for p in paths]
        deleted = client.delete("/v1/documents/docs/garden.md")  # as listed
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["deleted"] == "docs/garden.md"
        gone = client.delete("/v1/documents/" + str(corpus / "src" / "geometry.py").lstrip("/"))
        assert gone.status_code == 200, gone.text  # a stored path still works
        assert client.get("/v1/documents").json()["total"] == 0


def test_the_mcp_tool_lists_relative_paths(settings, corpus) -> None:
    engine = Engine(settings)
    try:
        engine.ingest([corpus])
        server = build_server(settings, engine)
        listed = anyio.run(lambda: server.call_tool("list_documents", {}))
    finally:
        engine.close()
    text = str(listed)
    assert "docs/garden.md" in text and str(corpus / "docs") not in text
