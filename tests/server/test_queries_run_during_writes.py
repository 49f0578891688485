"""Queries run in parallel during an ingest job, each answered from one index version; a version
written by the CLI into the same data dir is served without a restart; /metrics shows it all."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from live_server import LiveServer, wait_job

from hybrid_rag import cli


def test_parallel_queries_during_an_ingest_job(live: LiveServer, corpus: Path) -> None:
    extra = corpus / "docs" / "more"
    extra.mkdir()
    for i in range(40):
        (extra / f"orchard{i}.md").write_text(f"# Orchard {i}\n\nApple tree {i} needs pruning in winter.\n")
    failures: list[str] = []
    versions: set[int] = set()
    stop = threading.Event()

    def query_loop() -> None:
        with live.client() as client:
            while not stop.is_set():
                response = client.post("/v1/query", json={"query": "circle area radius", "top_k": 3})
                if response.status_code != 200:
                    failures.append(response.text)
                    continue
                body = response.json()
                versions.add(body["index_version"])
                if not body["results"] or not body["results"][0]["path"].endswith("geometry.py"):
                    failures.append(f"unexpected answer {body['results'][:1]}")

    threads = [threading.Thread(target=query_loop) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        with live.client() as client:
            job = client.post("/v1/ingest", json={"paths": ["docs"]}).json()
            done = wait_job(client, job["id"])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert done["status"] == "done" and len(done["result"]["added"]) == 40
    assert failures == []
    assert versions <= {1, 2} and 1 in versions
    with live.client() as client:
        stats = client.get("/v1/stats").json()
        assert stats["documents"] == 42 and stats["live_version"] == 2


def test_a_cli_ingest_is_picked_up_without_a_restart(live: LiveServer, tmp_path: Path) -> None:
    other = tmp_path / "cli-corpus"
    other.mkdir()
    (other / "kites.md").write_text("# Kites\n\nA box kite flies steadily in strong wind.\n")
    data_dir = str(live.app.state.service.settings.data_dir)
    with live.client() as client:
        before = client.post("/v1/query", json={"query": "box kite strong wind", "top_k": 1}).json()
        assert before["index_version"] == 1
        import os

        os.environ["HYBRID_RAG_EMBEDDING__MODEL"] = "fake"
        try:
            assert cli.main(["--data-dir", data_dir, "ingest", str(other), "--quiet"]) == 0
        finally:
            del os.environ["HYBRID_RAG_EMBEDDING__MODEL"]
        after = client.post("/v1/query", json={"query": "box kite strong wind", "top_k": 1}).json()
        assert after["index_version"] == 2
        assert after["results"][0]["path"].endswith("kites.md")


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name} {labels} in /metrics")


def test_metrics_count_routes_stages_version_and_chunks(live: LiveServer) -> None:
    with live.client() as client:
        for _ in range(3):
            assert client.post("/v1/query", json={"query": "soil drainage compost"}).status_code == 200
        client.post("/v1/query", json={"query": ""})
        response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    route = {"method": "POST", "route": "/v1/query"}
    assert _sample(text, "hybrid_rag_http_requests_total", **route, status="200") == 3
    assert _sample(text, "hybrid_rag_http_requests_total", **route, status="422") == 1
    assert _sample(text, "hybrid_rag_http_request_duration_seconds_count", **route) == 4
    assert _sample(text, "hybrid_rag_stage_duration_seconds_count", stage="fuse") == 3
    assert _sample(text, "hybrid_rag_index_version") == 1
    chunks = live.app.state.service.engine.stats().chunks
    assert chunks > 0 and _sample(text, "hybrid_rag_chunks") == chunks
    assert re.search(r'route="/v1/jobs/\{job_id\}"', text) is None  # no request to it yet: no label
