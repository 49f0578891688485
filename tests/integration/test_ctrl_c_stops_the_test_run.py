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


def test_a_ctrl_c_a_test_caught_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text(MODULE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "test_two.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's shell
    )
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout + done.stderr
    assert "KeyboardInterrupt" in done.stdout and "1 failed" in done.stdout
    assert "passed" not in done.stdout  # test_after_it never ran
