"""POST /v1/query and /v1/context results carry the engine's ``stale`` flag: a file edited on disk
after it was indexed is marked in every result citing it, the others are not."""

from __future__ import annotations

from pathlib import Path

from live_server import LiveServer


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
