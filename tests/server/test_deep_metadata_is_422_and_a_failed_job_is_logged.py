"""An ingest body whose ``metadata`` is nested past the limit is a 422 naming the field and the limit,
before any job; a job that fails unexpectedly leaves its traceback in ``logs/errors.log`` (the job's
error says "details in the server log"); an ingest job never reads hybrid-rag's own files."""

from __future__ import annotations

import time
from pathlib import Path

from live_server import LiveServer

from hybrid_rag.ingest.metadata import METADATA_MAX_DEPTH
from hybrid_rag.server.jobs import JobRunner


def test_metadata_nested_500_deep_is_422(live: LiveServer) -> None:
    deep: dict = {}
    node = deep
    for _ in range(500):
        node["k"] = {}
        node = node["k"]
    with live.client() as client:
        response = client.post("/v1/ingest", json={"paths": ["docs"], "metadata": {"deep": deep}})
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["field"] == "metadata"
        assert f"nested over {METADATA_MAX_DEPTH} levels" in error["message"]


def test_a_job_that_fails_unexpectedly_is_logged(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    jobs = JobRunner(tmp_path / "jobs", logs)

    def work(progress: object) -> dict:
        raise ZeroDivisionError("a bug in the job")

    record = jobs.submit("ingest", work, request={})
    deadline = time.monotonic() + 20
    while jobs.get(record["id"])["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert jobs.get(record["id"])["error"]["status"] == 500
    text = (logs / "errors.log").read_text()
    assert record["id"] in text and "ZeroDivisionError: a bug in the job" in text
    jobs.stop(5)


def test_an_ingest_job_skips_another_data_dir_and_keys_files(live: LiveServer, corpus: Path) -> None:
    """Over HTTP as in the CLI: a data dir another hybrid-rag left in an ingest root, a file named
    ``api_keys`` and a hard link to the server's own keys file are skipped, never served."""
    import os

    from live_server import wait_job

    secret = "swordfish-secret-key-0123456789"
    other = corpus / "docs" / "data"
    (other / "indices").mkdir(parents=True)
    (other / "indices" / "CURRENT").write_text("1\n")
    (other / "store.sqlite3").write_bytes(b"SQLite format 3\x00")
    (other / "notes.md").write_text(f"# Logged\n\n{secret}\n")
    (corpus / "api_keys").write_text(f"{secret}\n")
    home = live.app.state.service.settings.data_dir
    (home / "api_keys").write_text(f"{secret}\n")
    os.link(home / "api_keys", corpus / "keys.md")
    with live.client() as client:
        queued = client.post("/v1/ingest", json={"paths": ["."]})
        assert queued.status_code == 202, queued.text
        job = wait_job(client, queued.json()["id"])
        assert job["status"] == "done", job
        found = client.post("/v1/query", json={"query": secret, "mode": "bm25", "top_k": 10}).json()
        assert all(secret not in r["text"] for r in found["results"])
