"""A graceful shutdown (SIGTERM, Ctrl-C: uvicorn's should_exit) lets an in-flight request finish."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from live_server import LiveServer, server_settings


def test_in_flight_request_completes_during_shutdown(tmp_path: Path) -> None:
    server = LiveServer(server_settings(tmp_path), None)
    engine = server.app.state.service.engine
    original = engine.stats
    started = threading.Event()

    def slow_stats():  # a request that is still running when the shutdown begins
        started.set()
        time.sleep(1.0)
        return original()

    engine.stats = slow_stats
    answers: list[int] = []

    def call() -> None:
        with server.client(None) as client:
            answers.append(client.get("/v1/stats").status_code)

    caller = threading.Thread(target=call)
    caller.start()
    assert started.wait(10)
    server.stop()  # should_exit while the request runs
    caller.join(10)
    assert answers == [200]
    assert not server.thread.is_alive()
