"""A real full disk: the data dir on a 2 MiB tmpfs. An ingest that does not fit is one line naming
the disk, exit 2; what was ingested before (and the batches committed) is still there, queries keep
answering (their log cannot be written: a warning), and with space again the same ingest finishes.
Needs root for `mount` (skips with the reason elsewhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True, text=True
        )
    except FileNotFoundError:
        pytest.skip("no mount command")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYBRID_RAG_EMBEDDING__MODEL": "fake"}
    command = [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def _fill(mount: Path) -> None:
    """Take what space is left, so the next write finds none."""
    with open(mount / "ballast", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass


def test_an_ingest_that_does_not_fit_is_named_and_loses_nothing(tiny_disk: Path, corpus: Path) -> None:
    data = tiny_disk / "data"
    assert _cli(data, "ingest", str(corpus)).returncode == 0
    big = corpus / "big"
    big.mkdir()
    for i in range(40):
        text = "\n\n".join(f"Paragraph {i}.{j}: swallows migrate south over the sea." * 8 for j in range(40))
        (big / f"notes{i}.md").write_text(f"# Notes {i}\n\n{text}\n")
    done = _cli(data, "ingest", "--quiet", str(corpus))  # the error alone on stderr, no progress
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"no space left on the disk mounted at {tiny_disk}" in done.stderr
    stats = _cli(data, "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    kept = json.loads(stats.stdout)
    assert kept["documents"] >= 2 and kept["live_version"] == 1  # the batches committed before it stay
    _fill(tiny_disk)
    query = _cli(data, "query", "soil compost")
    assert "unexpected" not in query.stderr
    if query.returncode == 0:  # the store opened in what little was left: only the log failed
        assert "garden.md" in query.stdout and "warning: the query log" in query.stderr
    else:  # not even room for SQLite's -shm file: the disk is named, nothing is touched
        assert query.returncode == 2 and "no space left on the disk mounted at" in query.stderr

    (tiny_disk / "ballast").unlink()
    subprocess.run(["mount", "-o", "remount,size=64m", str(tiny_disk)], check=True)  # space again
    assert _cli(data, "ingest", str(corpus)).returncode == 0
    assert json.loads(_cli(data, "stats", "--json").stdout)["documents"] == 42
