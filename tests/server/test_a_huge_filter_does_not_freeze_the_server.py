"""A filter within the body limit is parsed off the event loop, under the request timeout: /healthz
keeps answering meanwhile, and a filter over the limits is refused in one line naming the limit."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys
from hybrid_rag.settings import ServerSettings


def test_the_largest_filter_a_body_holds_is_refused_while_healthz_answers(
    tmp_path: Path, corpus: Path
) -> None:
    limit = ServerSettings().max_body_bytes
    terms = " and ".join(f"size!={i}" for i in range(40_000))
    text = terms[: limit - 200].rsplit(" and ", 1)[0]  # as many terms as the default body holds
    engine = Engine(server_settings(tmp_path))
    engine.ingest([corpus])
    server = LiveServer(engine.settings, ApiKeys.of((KEY,)), engine)
    stalls: list[float] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            while not done.is_set():
                start = time.perf_counter()
                client.get("/healthz")
                stalls.append(time.perf_counter() - start)
                time.sleep(0.01)

    watcher = threading.Thread(target=probe)
    try:
        with server.client() as client:
            watcher.start()
            answer = client.post("/v1/query", json={"query": "soil", "filters": text})
            too_big = client.post("/v1/query", json={"query": "soil", "filters": terms})
    finally:
        done.set()
        watcher.join()
        server.stop()
    assert answer.status_code == 422 and "retrieval.filter_max_terms" in answer.json()["error"]["message"]
    assert too_big.status_code == 413
    assert stalls and max(stalls) < 2.0  # the loop kept answering (generous: the CI machine is shared)
