"""`hybrid-rag watch DIR 2> DIR/watch.log` looped forever: each ingest wrote a line to the log, the
log is in the watched folder, its change woke another ingest. Its own output files' changes are
ignored now (and it says so once); a real change still wakes it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("watchfiles")

from hybrid_rag.engine import Engine
from hybrid_rag.watch import watch


def test_its_own_log_file_in_the_folder_does_not_wake_it(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text("# First\n\nApples in the orchard.\n")
    log = folder / "watch.log"
    log.write_text("")
    stop, lines = threading.Event(), []

    def say(line: str) -> None:  # as the CLI's stderr, redirected into the folder
        lines.append(line)
        with log.open("a") as fh:
            fh.write(f"hybrid-rag: watch: {line}\n")

    def run() -> None:
        summary.append(watch(engine, [folder], stop=stop, say=say, debounce_ms=50, own_files=[log]))

    summary: list = []
    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while not any(x.startswith("watching") for x in lines):
            assert runner.is_alive() and time.monotonic() < deadline, lines
            time.sleep(0.05)
        time.sleep(3)  # ample time for a loop to show: each ingest writes, each write woke an ingest
        quiet = len(lines)
        (folder / "second.md").write_text("# Second\n\nPears in the garden.\n")
        while not any(" new, " in x for x in lines[quiet:]):  # second.md (and the log, now written)
            assert runner.is_alive() and time.monotonic() < deadline + 60, lines
            time.sleep(0.05)
        time.sleep(2)
    finally:
        stop.set()
        runner.join(60)
    after = lines[lines.index(next(x for x in lines if x.startswith("watching"))) + 1 :]
    ingests = [x for x in after if " new, " in x]
    assert len(ingests) <= 2, after  # the real change (and at most one quiet catch-up), no loop
    assert summary and summary[0].ingests <= 4, summary
    assert any("its own output" in x and "watch.log" in x for x in lines)
