"""``watch`` reports the files it skips as ``ingest`` does (the count and one line a file with its
reason): a corrupt PDF added while watching is named, not hidden behind "nothing changed"; a skip
already reported is not repeated at every later ingest."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("watchfiles")

from hybrid_rag.engine import Engine
from hybrid_rag.watch import watch


def test_a_corrupt_file_added_while_watching_is_reported(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text("# First\n\nApples in the orchard.\n")
    (folder / "old.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf\n")
    stop, lines = threading.Event(), []

    def say(line: str) -> None:
        lines.append(line)
        if line.startswith("watching"):
            (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is no PDF either\n")

    runner = threading.Thread(target=lambda: watch(engine, [folder], stop=stop, say=say, debounce_ms=50))
    runner.start()
    deadline = time.monotonic() + 120
    try:
        while not any("broken.pdf" in x for x in lines):
            assert runner.is_alive() and time.monotonic() < deadline, lines
            time.sleep(0.05)
        time.sleep(0.5)  # a later quiet catch-up must not report the same skips again
    finally:
        stop.set()
        runner.join(60)
    assert lines[0].startswith("1 new, 0 changed, 0 deleted, 1 skipped")
    assert lines[1].startswith("skipped ") and "old.pdf: " in lines[1]
    later = lines[lines.index(next(x for x in lines if x.startswith("watching"))) + 1 :]
    assert any(x.startswith("0 new, 0 changed, 0 deleted, 2 skipped") for x in later), later
    broken = [x for x in later if "broken.pdf" in x]
    assert len(broken) == 1 and broken[0].startswith("skipped ") and "broken.pdf: " in broken[0]
    assert not any("old.pdf" in x for x in later), later
