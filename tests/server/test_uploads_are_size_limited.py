"""POST /v1/documents: multipart upload ingested as a job, within server.max_upload_bytes; bad names
refused; DELETE /v1/documents/{path} removes the document and its uploaded file."""

from __future__ import annotations

from pathlib import Path

from live_server import KEY, LiveServer, server_settings, wait_job

from hybrid_rag.server.auth import ApiKeys


def test_upload_query_delete(live: LiveServer) -> None:
    text = b"# Beekeeping\n\nA queen excluder keeps the queen out of the honey supers.\n"
    with live.client() as client:
        queued = client.post(
            "/v1/documents", files={"files": ("bees.md", text)}, data={"collection": "notes"}
        )
        assert queued.status_code == 202, queued.text
        job = wait_job(client, queued.json()["id"])
        assert job["status"] == "done", job
        hit = client.post("/v1/query", json={"query": "queen excluder honey supers", "top_k": 1}).json()
        shown = hit["results"][0]["path"]  # relative to the ingested root (hybrid_rag/paths.py)
        listed = client.get("/v1/documents", params={"collection": "notes"}).json()
        assert [d["path"] for d in listed["documents"]] == [shown]  # as results show it
        stored = client.get("/v1/documents", params={"collection": "notes", "absolute_paths": True}).json()
        [path] = [d["path"] for d in stored["documents"]]
        assert path.endswith("/uploads/notes/bees.md") and path.endswith("/" + shown)
        assert Path(path).read_bytes() == text
        deleted = client.delete("/v1/documents/" + shown)
        assert deleted.status_code == 200, deleted.text
        assert not Path(path).exists()
        assert client.get("/v1/documents", params={"collection": "notes"}).json()["total"] == 0


def test_bad_names_and_sizes(tmp_path: Path) -> None:
    settings = server_settings(tmp_path, **{"server.max_upload_bytes": 2000})
    server = LiveServer(settings, ApiKeys.of((KEY,)))
    try:
        with server.client() as client:
            for name in ("../escape.md", ".hidden", "a/b.md", ""):
                response = client.post("/v1/documents", files={"files": (name, b"# x\n\nfine text\n")})
                assert response.status_code == 422, (name, response.text)
            response = client.post("/v1/documents", files={"files": ("big.md", b"a" * 5000)})
            assert response.status_code == 413 and response.json()["error"]["field"] == "body"
            response = client.post(
                "/v1/documents", files={"files": ("ok.md", b"x")}, data={"collection": "../x"}
            )
            assert response.status_code == 422 and response.json()["error"]["field"] == "collection"
            assert not (settings.data_dir / "uploads").exists() or not any(
                (settings.data_dir / "uploads").rglob("*.md")
            )
    finally:
        server.stop()
