"""Server-side ingest reads only below server.ingest_roots: ``..``, symbolic links and absolute
paths that lead out are 403; a good path runs as a job whose progress and result are readable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from live_server import LiveServer, wait_job


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "passwords.md").write_text("# secrets\n\nthe root password is swordfish\n")
    return secret


def test_escapes_are_forbidden(live: LiveServer, corpus: Path, outside: Path) -> None:
    (corpus / "docs" / "link-out").symlink_to(outside, target_is_directory=True)
    (corpus / "docs" / "file-out.md").symlink_to(outside / "passwords.md")
    attempts = [
        "../secret",
        "docs/../../secret/passwords.md",
        str(outside),
        str(outside / "passwords.md"),
        str(corpus / "docs" / "link-out"),
        "docs/file-out.md",
        "/etc/passwd",
        "~",
    ]
    with live.client() as client:
        for attempt in attempts:
            response = client.post("/v1/ingest", json={"paths": [attempt]})
            assert response.status_code == 403, (attempt, response.text)
            error = response.json()["error"]
            assert error["field"] == "paths[0]" and "outside server.ingest_roots" in error["message"]
        found = client.post("/v1/query", json={"query": "root password swordfish", "top_k": 10}).json()
        assert all("secret" not in r["path"] for r in found["results"])


def test_missing_path_is_404_and_bad_body_422(live: LiveServer, corpus: Path) -> None:
    with live.client() as client:
        missing = client.post("/v1/ingest", json={"paths": ["docs/nothing-here.md"]})
        assert missing.status_code == 404 and missing.json()["error"]["field"] == "paths[0]"
        assert client.post("/v1/ingest", json={"paths": []}).status_code == 422
        assert client.post("/v1/ingest", json={"paths": "docs"}).status_code == 422


def test_no_roots_means_no_server_side_ingest(tmp_path: Path, corpus: Path) -> None:
    from live_server import server_settings

    server = LiveServer(server_settings(tmp_path), None)
    try:
        with server.client(None) as client:
            response = client.post("/v1/ingest", json={"paths": [str(corpus)]})
            assert (
                response.status_code == 403 and "server.ingest_roots" in response.json()["error"]["message"]
            )
    finally:
        server.stop()


def test_an_ingest_job_reports_progress_and_its_result(live: LiveServer, corpus: Path) -> None:
    (corpus / "docs" / "roses.md").write_text("# Roses\n\nPrune roses in late winter above an outward bud.\n")
    with live.client() as client:
        queued = client.post("/v1/ingest", json={"paths": ["docs"], "collection": "garden"})
        assert queued.status_code == 202 and queued.headers["location"] == f"/v1/jobs/{queued.json()['id']}"
        job = wait_job(client, queued.json()["id"])
        assert job["status"] == "done", job
        assert job["result"]["added"] == [os.path.realpath(corpus / "docs" / "roses.md")]
        assert job["progress"]["index"] == {"done": 1, "total": 1}
        # the job loaded the version it made live: the next query does not wait for the load
        assert live.app.state.service.engine.indices.loaded_versions() == [job["result"]["index_version"]]
        hits = client.post("/v1/query", json={"query": "prune roses winter bud", "top_k": 1}).json()
        assert hits["results"][0]["path"].endswith("roses.md")
        assert hits["index_version"] == job["result"]["index_version"]


def test_the_data_dir_under_a_root_is_forbidden(tmp_path: Path) -> None:
    """With ingest_roots ["."] around the data dir, its API keys are still never ingested."""
    from live_server import KEY, server_settings

    from hybrid_rag.server.auth import ApiKeys

    settings = server_settings(tmp_path, **{"server.ingest_roots": [str(tmp_path)]})
    settings.data_dir.mkdir(parents=True)
    (settings.data_dir / "api_keys").write_text(KEY + "\n")
    server = LiveServer(settings, ApiKeys.of((KEY,)))
    try:
        with server.client() as client:
            for attempt in ("data/api_keys", "data", str(settings.data_dir / "api_keys")):
                response = client.post("/v1/ingest", json={"paths": [attempt]})
                assert response.status_code == 403, (attempt, response.text)
                assert "data dir" in response.json()["error"]["message"]
    finally:
        server.stop()
