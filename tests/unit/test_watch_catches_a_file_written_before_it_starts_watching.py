"""A file written after watch's first ingest has scanned but before the watcher is armed is still
ingested (the first gathering, or a quiet RETRY_MS, owes an ingest); stopping the event ends it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("watchfiles")

from hybrid_rag.engine import Engine
from hybrid_rag.watch import watch


def test_a_file_written_in_the_gap_is_ingested(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text("# First\n\nApples in the orchard.\n")
    stop, lines = threading.Event(), []

    def say(line: str) -> None:
        lines.append(line)
        if line.startswith("watching"):  # the first ingest is done, the watcher not yet armed
            (folder / "late.md").write_text("# Late\n\nQuinces ripen late.\n")

    runner = threading.Thread(target=lambda: lines.append(watch(engine, [folder], stop=stop, say=say)))
    runner.start()
    deadline = time.monotonic() + 120
    while not any(isinstance(x, str) and x.startswith("1 new") and "version 2" in x for x in lines):
        assert runner.is_alive() and time.monotonic() < deadline, lines
        time.sleep(0.05)
    stop.set()
    runner.join(60)
    assert not runner.is_alive()
    summary = lines[-1]
    assert not summary.interrupted and summary.failures == 0  # type: ignore[union-attr]
    found = engine.query("quinces", mode="bm25", absolute_paths=True).chunks
    assert {c.path for c in found} >= {str(folder / "late.md")}


def test_a_debounce_below_one_is_refused(engine: Engine, tmp_path: Path) -> None:
    from hybrid_rag.errors import InputError

    with pytest.raises(InputError, match="debounce"):
        watch(engine, [tmp_path], stop=threading.Event(), say=print, debounce_ms=0)
