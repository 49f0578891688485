"""``watch`` started over a tree already indexed confirms it by size and mtime: its first ingest
reads no file and builds nothing; after an edit, the re-ingest reads the edited file alone
(the stat fast path of ``ingest/freshness.py``, under ``watch`` as under ``ingest``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("watchfiles")

from hybrid_rag.engine import Engine
from hybrid_rag.watch import watch


def test_an_unchanged_tree_is_not_read_and_an_edit_is_read_alone(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ingest([corpus])
    read_paths: list[Path] = []
    read_bytes = Path.read_bytes

    def counting(self: Path) -> bytes:
        if self.resolve().is_relative_to(corpus.resolve()):
            read_paths.append(self.resolve())
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    stop, lines = threading.Event(), []
    garden = corpus / "docs" / "garden.md"

    def say(line: str) -> None:
        lines.append(line)
        if line.startswith("watching"):
            garden.write_text(garden.read_text() + "\nQuinces ripen late.\n")

    runner = threading.Thread(target=lambda: lines.append(watch(engine, [corpus], stop=stop, say=say)))
    runner.start()
    deadline = time.monotonic() + 120
    while not any(isinstance(x, str) and x.startswith("0 new, 1 changed") for x in lines):
        assert runner.is_alive() and time.monotonic() < deadline, lines
        time.sleep(0.05)
    stop.set()
    runner.join(60)
    assert not runner.is_alive()
    assert lines[0].endswith("nothing changed; index left as it is"), lines
    assert set(read_paths) == {garden.resolve()}, read_paths
