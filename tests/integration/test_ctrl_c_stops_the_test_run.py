"""A Ctrl-C of the test run stops it even when it lands in a test that catches KeyboardInterrupt
(one that runs the CLI in this process: ``main`` answers exit 130), instead of failing that test
and going on (tests/conftest.py). Run on a two-test module in a pytest of its own, with SIGINT
at its default as in a terminal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
TESTS = Path(__file__).resolve().parents[1]

MODULE = """
import os, signal, time


def test_catches_the_ctrl_c():
    try:
        os.kill(os.getpid(), signal.SIGINT)  # the terminal's Ctrl-C
        time.sleep(5)
    except KeyboardInterrupt:
        pass  # as `hybrid_rag.cli.main` does: "hybrid-rag: interrupted", exit 130
    raise AssertionError("interrupted")


def test_after_it():
    pass
"""


INGEST_MODULE = """
import os, signal, time

from hybrid_rag.interrupts import ctrl_c_stops


def test_an_ingest_stops_after_its_batch():
    with ctrl_c_stops() as stop:  # as `hybrid-rag ingest` run in this process (``main``)
        os.kill(os.getpid(), signal.SIGINT)
        while not stop.is_set():
            time.sleep(0.01)
    # the ingest returns 130 ("interrupted: ... run the same ingest again"): no exception here


def test_after_it():
    pass
"""


def run_two(tmp_path: Path, module: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_two.py").write_text(module)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "test_two.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's shell
    )


def test_a_ctrl_c_a_test_caught_stops_the_run(tmp_path: Path) -> None:
    done = run_two(tmp_path, MODULE)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout + done.stderr
    assert "KeyboardInterrupt" in done.stdout and "1 failed" in done.stdout
    assert "passed" not in done.stdout  # test_after_it never ran


def test_a_ctrl_c_in_an_in_process_ingest_stops_the_run(tmp_path: Path) -> None:
    done = run_two(tmp_path, INGEST_MODULE)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout + done.stderr
    assert "passed" not in done.stdout or "1 passed" in done.stdout  # test_after_it never ran
    assert "2 passed" not in done.stdout
