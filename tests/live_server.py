"""A real server for tests/server: uvicorn on a free 127.0.0.1 port in a thread, over an engine with the
fake embedder, and a real httpx client. No TestClient: requests go through the socket."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import uvicorn
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.server.app import create_app
from hybrid_rag.server.auth import ApiKeys
from hybrid_rag.settings import Settings

KEY = "test-key-0123456789abcdef"
OTHER_KEY = "second-key-0123456789abcdef"


class LiveServer:
    """``create_app`` served by uvicorn in a thread until ``stop``."""

    def __init__(self, settings: Settings, keys: ApiKeys | None, engine: Engine | None = None) -> None:
        self.app = create_app(settings, keys=keys, engine=engine)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def client(self, key: str | None = KEY) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def server_settings(tmp_path: Path, **overrides: object) -> Settings:
    return fake_settings(tmp_path / "data", overrides)


def wait_job(client: httpx.Client, job_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")
