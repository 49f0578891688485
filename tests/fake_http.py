"""A canned-reply HTTP server on 127.0.0.1 for client tests (generator, API reranker)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, bytes]


@dataclass
class FakeServer:
    """Serves canned replies in order (the last one repeats) and records every request."""

    replies: list[Reply] = field(default_factory=list)
    delay: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def next_reply(self) -> Reply:
        return self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]


@contextmanager
def serve(path: str) -> Iterator[FakeServer]:
    """A running FakeServer whose ``url`` is ``http://127.0.0.1:<port><path>``."""
    state = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.requests.append({"path": self.path, "headers": dict(self.headers), "body": raw})
            if state.delay:
                state.release.wait(state.delay)
            status, body = state.next_reply()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up (timeout test)
                pass

        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}{path}"
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def closed_port() -> int:
    """A local port nothing listens on (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
