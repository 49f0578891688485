"""Every 4xx path of the HTTP API: a JSON error naming the field, never a 500, never a traceback."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from live_server import LiveServer, server_settings

from hybrid_rag.server.auth import ApiKeys


def _error(response: httpx.Response, status: int, field: str | None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert "Traceback" not in response.text
    error = response.json()["error"]
    assert error["status"] == status and error["message"]
    if field is not None:
        assert error["field"] == field, error
    return error


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 5000}, "query"),  # over server.max_query_chars 4000
        ({"query": "circle", "top_k": 0}, "top_k"),
        ({"query": "circle", "top_k": 101}, "top_k"),  # over server.max_top_k
        ({"query": "circle", "top_k": "5"}, "top_k"),  # strict types: no string for a number
        ({"query": "circle", "top_k": True}, "top_k"),
        ({"query": "circle", "mode": "fuzzy"}, "mode"),
        ({"query": "circle", "filters": "colour = red"}, "filters"),  # an unknown filter field
        ({"query": "circle", "filters": "path ~"}, "filters"),
        ({"query": "circle", "features": {"teleport": True}}, "features"),
        ({"query": "circle", "features": {"rerank": "yes"}}, "features.rerank"),
        ({"query": "circle", "surprise": 1}, "surprise"),
        ({"query": "circle", "lang": "xx"}, "lang"),  # no language: was taken
        # over retrieval.filter_max_terms (a meta. comparison counts 20): was the engine's 400
        ({"query": "circle", "filters": " and ".join(f"meta.k{i} = v" for i in range(300))}, "filters"),
    ],
)
def test_bad_query_bodies_name_the_field(live: LiveServer, body: dict, field: str) -> None:
    with live.client() as client:
        _error(client.post("/v1/query", json=body), 422, field)


def test_context_and_ask_limits(live: LiveServer) -> None:
    with live.client() as client:
        _error(client.post("/v1/context", json={"query": "soil", "max_tokens": 10**6}), 422, "max_tokens")
        _error(client.post("/v1/context", json={"query": "soil", "max_tokens": 0}), 422, "max_tokens")
        _error(client.post("/v1/ask", json={"query": "soil", "answer_tokens": -1}), 422, "answer_tokens")


def test_malformed_and_oversized_bodies(live: LiveServer) -> None:
    with live.client() as client:
        headers = {"content-type": "application/json"}
        _error(client.post("/v1/query", content=b"{not json", headers=headers), 422, "body")
        _error(client.post("/v1/query", content=b"[1, 2]", headers=headers), 422, None)
        big = b'{"query": "' + b"a" * 9000 + b'"}'  # over server.max_body_bytes 8000 (the fixture's)
        _error(client.post("/v1/query", content=big, headers=headers), 413, "body")

        def chunks():  # no Content-Length: counted while it streams in
            yield b'{"query": "'
            for _ in range(20):
                yield b"a" * 1000
            yield b'"}'

        _error(client.post("/v1/query", content=chunks(), headers=headers), 413, "body")


def test_unknown_routes_methods_jobs_versions_documents(live: LiveServer) -> None:
    with live.client() as client:
        _error(client.get("/v1/nothing"), 404, None)
        _error(client.get("/v1/query"), 405, None)
        _error(client.get("/v1/jobs/0123456789abcdef"), 404, "id")
        _error(client.get("/v1/jobs/..%2F..%2Fetc"), 404, None)
        _error(client.post("/v1/rollback", json={"version": 99}), 404, "version")  # not on disk: was 409
        _error(client.post("/v1/rollback", json={"version": 0}), 422, "version")
        _error(client.delete("/v1/documents/no/such/file.md"), 404, "path")
        _error(client.get("/v1/documents", params={"limit": 0}), 422, "limit")
        _error(client.get("/v1/documents", params={"limit": "many"}), 422, "limit")


def test_an_empty_store_answers_409_and_is_not_ready(tmp_path: Path) -> None:
    server = LiveServer(server_settings(tmp_path), ApiKeys.of(("k" * 20,)))
    try:
        with server.client("k" * 20) as client:
            error = _error(client.post("/v1/query", json={"query": "anything"}), 409, None)
            assert error["type"] == "NoIndexError" and "ingest" in error["message"]
            ready = client.get("/readyz")
            assert ready.status_code == 503 and ready.json()["ready"] is False
            assert client.get("/healthz").json() == {"status": "ok"}
    finally:
        server.stop()


def test_a_slow_call_is_a_504_not_a_hang(tmp_path: Path, corpus: Path) -> None:
    settings = server_settings(tmp_path, **{"server.request_timeout_seconds": 0.2})
    server = LiveServer(settings, None)
    try:
        import time

        original = server.app.state.service.engine.stats
        server.app.state.service.engine.stats = lambda: (time.sleep(2), original())[1]
        with server.client(None) as client:
            error = _error(client.get("/v1/stats"), 504, None)
            assert "server.request_timeout_seconds" in error["message"]
    finally:
        server.stop()
