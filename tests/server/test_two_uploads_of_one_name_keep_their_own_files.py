"""Two uploads of one file name queued while another writer holds the data dir: each job ingests
the file its request sent. They shared `uploads/<collection>/<name>`, so the first job's clean-up
(it failed: the writer was busy) deleted the second upload's file, and the second job failed with
an error naming that internal path."""

from __future__ import annotations

import time
from pathlib import Path

from live_server import KEY, LiveServer, server_settings, wait_job

from hybrid_rag.server.auth import ApiKeys
from hybrid_rag.store.writer_lock import WriterLock

FIRST = b"# Bees\n\nThe first draft says the queen excluder sits below the brood box.\n"
SECOND = b"# Bees\n\nThe second draft says the queen excluder keeps the queen out of the supers.\n"


def _wait_status(client, job_id: str, status: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while client.get(f"/v1/jobs/{job_id}").json()["status"] != status:
        assert time.monotonic() < deadline, f"job {job_id} never reached {status}"
        time.sleep(0.02)


def test_the_first_jobs_clean_up_keeps_the_second_uploads_file(tmp_path: Path) -> None:
    settings = server_settings(tmp_path, **{"store.writer_wait_seconds": 1.0})
    server = LiveServer(settings, ApiKeys.of((KEY,)))
    try:
        with server.client() as client:
            with WriterLock(settings.data_dir, wait_seconds=0).hold("ingest"):  # a CLI ingest, say
                ids = []
                for text in (FIRST, SECOND):
                    queued = client.post(
                        "/v1/documents", files={"files": ("bees.md", text)}, data={"collection": "notes"}
                    )
                    assert queued.status_code == 202, queued.text
                    ids.append(queued.json()["id"])
                _wait_status(client, ids[0], "failed")  # the writer stayed busy past its wait
                _wait_status(client, ids[1], "running")  # the second waits for the writer
            first, second = wait_job(client, ids[0]), wait_job(client, ids[1])
            assert "another write is running" in first["error"]["message"]
            assert second["status"] == "done", second  # was: failed, naming data/uploads/notes/bees.md
            listed = client.get("/v1/documents", params={"collection": "notes", "absolute_paths": True})
            [path] = [d["path"] for d in listed.json()["documents"]]
            assert Path(path).read_bytes() == SECOND  # the second upload's file, kept with its document
            hit = client.post("/v1/query", json={"query": "queen excluder supers", "top_k": 1}).json()
            assert "second draft" in hit["results"][0]["text"]
    finally:
        server.stop()


def test_two_queued_uploads_of_one_name_each_ingest_their_own_text(tmp_path: Path) -> None:
    settings = server_settings(tmp_path, **{"store.writer_wait_seconds": 30.0})
    server = LiveServer(settings, ApiKeys.of((KEY,)))
    try:
        with server.client() as client:
            with WriterLock(settings.data_dir, wait_seconds=0).hold("ingest"):
                ids = []
                for text in (FIRST, SECOND):
                    queued = client.post(
                        "/v1/documents", files={"files": ("bees.md", text)}, data={"collection": "notes"}
                    )
                    ids.append(queued.json()["id"])
                _wait_status(client, ids[0], "running")
            first, second = wait_job(client, ids[0]), wait_job(client, ids[1])
            assert first["status"] == second["status"] == "done", (first, second)
            # the first job stored the first upload, the second replaced it (the first read the
            # second's text, which had overwritten the shared file, and the second found it unchanged)
            assert first["result"]["added"] and second["result"]["changed"], (first, second)
            listed = client.get("/v1/documents", params={"collection": "notes", "absolute_paths": True})
            [path] = [d["path"] for d in listed.json()["documents"]]
            assert Path(path).read_bytes() == SECOND
    finally:
        server.stop()
