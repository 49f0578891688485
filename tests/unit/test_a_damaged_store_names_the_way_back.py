"""A truncated store file is an error that names the way back: restore it, or ingest the files again
into a fresh data dir (the command is in the message), and that command works."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hybrid_rag.cli import main


@pytest.fixture(autouse=True)
def _fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")


def test_a_truncated_store_names_restore_and_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nbees visit flower number {i} in the garden\n")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(docs)]) == 0
    store = data / "store.sqlite3"
    os.truncate(store, store.stat().st_size // 2)
    for name in ("store.sqlite3-wal", "store.sqlite3-shm"):
        (data / name).unlink(missing_ok=True)
    capsys.readouterr()
    assert main(["--data-dir", str(data), "stats"]) == 2
    err = capsys.readouterr().err
    assert "is damaged" in err and "restore it from a backup" in err
    assert f"move {data} aside" in err and "ingest PATH" in err
    shutil.move(data, tmp_path / "damaged")  # the way back the message names
    assert main(["--data-dir", str(data), "ingest", str(docs)]) == 0
    assert main(["--data-dir", str(data), "query", "bees flower number 7"]) == 0
