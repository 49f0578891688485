"""``hybrid-rag watch`` as a real process: it ingests the folder, a file written later becomes
queryable (through a running server over the same data dir, which follows CURRENT), a file deleted
later leaves the answers, and Ctrl-C (SIGINT) stops it cleanly with exit code 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("watchfiles")
pytest.importorskip("fastapi")
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.server.auth import ApiKeys

pytestmark = pytest.mark.integration
WAIT = 120  # seconds a step may take on a loaded machine before the test gives up


class Watch:
    """``hybrid-rag watch`` in a subprocess; its stderr lines collected by a thread."""

    def __init__(self, data_dir: Path, folder: Path) -> None:
        env = {**os.environ, "HYBRID_RAG_EMBEDDING__MODEL": "fake", "HYBRID_RAG_WATCH__DEBOUNCE_MS": "200"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data_dir), "watch", str(folder)],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not a background job's
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + WAIT
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None, f"watch exited: {self.lines}"
            assert time.monotonic() < deadline, f"no {text!r} from watch: {self.lines}"
            time.sleep(0.05)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "garden.md").write_text("# Garden\n\nTomatoes need full sun and regular watering.\n")
    return root


@pytest.fixture
def watching(tmp_path: Path, folder: Path) -> Iterator[Watch]:
    watch = Watch(tmp_path / "data", folder)
    yield watch
    if watch.process.poll() is None:
        watch.process.kill()
        watch.process.wait(30)


def paths_found(server: LiveServer, word: str) -> set[str]:
    with server.client() as http:
        answer = http.post("/v1/query", json={"query": word, "mode": "bm25", "top_k": 10})
    return {r["path"] for r in answer.json()["results"]} if answer.status_code == 200 else set()


def wait_until(check: object, message: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, message
        time.sleep(0.1)


def test_a_written_file_becomes_queryable_and_ctrl_c_stops(
    tmp_path: Path, folder: Path, watching: Watch
) -> None:
    watching.wait_for("watching")
    server = LiveServer(server_settings(tmp_path), ApiKeys.of((KEY,)))
    try:
        assert paths_found(server, "tomatoes") == {"garden.md"}  # shown relative to the ingested root
        (folder / "orchard.md").write_text("# Orchard\n\nQuinces ripen late in the autumn.\n")
        wait_until(lambda: "orchard.md" in paths_found(server, "quinces"), "never queryable")
        (folder / "garden.md").unlink()
        wait_until(lambda: not paths_found(server, "tomatoes"), "a deleted file still answers")
    finally:
        server.stop()
    watching.process.send_signal(signal.SIGINT)
    assert watching.process.wait(WAIT) == 0
    watching.reader.join(WAIT)
    assert any("1 new, 0 changed, 0 deleted, 0 skipped: index version" in line for line in watching.lines)
    assert any("0 new, 0 changed, 1 deleted, 0 skipped: index version" in line for line in watching.lines)
    assert watching.lines[-1].startswith("hybrid-rag: watch: stopped after")
    assert not any("Traceback" in line for line in watching.lines)


def test_a_missing_path_is_one_error_line(tmp_path: Path) -> None:
    env = {**os.environ, "HYBRID_RAG_EMBEDDING__MODEL": "fake"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hybrid_rag.cli",
            "--data-dir",
            str(tmp_path / "d"),
            "watch",
            str(tmp_path / "no"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=WAIT,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "hybrid-rag: error:" in done.stderr
