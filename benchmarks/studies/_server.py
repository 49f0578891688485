"""Waiting for a `hybrid-rag serve` process a study started: the one readiness loop of the studies."""

from __future__ import annotations

import subprocess
import time

import httpx


def wait_ready(process: subprocess.Popen[bytes], url: str, seconds: float = 180.0) -> None:
    """Return once ``url``/readyz answers 200; RuntimeError (the process stopped) if it exits first
    or stays unready for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        time.sleep(0.5)
    process.terminate()
    raise RuntimeError(f"the server did not become ready in {seconds:.0f} s")
