"""A store file that is missing or empty while an index built from it is live is an error naming
what happened and how to recover, never a new empty store that answers "0 documents" (issue 25.5).
Only a first ingest into an empty data dir creates a store; a store restored in place is reopened."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import StoreError
from hybrid_rag.settings import Settings


def _ingest_once(settings: Settings, corpus: Path) -> None:
    first = Engine(settings)
    first.ingest([corpus])
    first.close()


def _vanish(path: Path, how: str) -> None:
    if how == "missing":
        path.unlink()
        for extra in path.parent.glob(path.name + "-*"):  # the WAL and its index go with it
            extra.unlink()
    else:
        path.write_bytes(b"")


@pytest.mark.parametrize("how", ["missing", "empty"])
def test_a_store_gone_under_a_live_index_is_named_with_the_recovery(
    settings: Settings, corpus: Path, how: str
) -> None:
    _ingest_once(settings, corpus)
    _vanish(settings.store_path, how)
    engine = Engine(settings)
    expected = f"the store {settings.store_path} is {how} but index v1 is live: restore the store file"
    for call in (engine.stats, lambda: engine.query("soil"), engine.documents, engine.rebuild):
        with pytest.raises(StoreError, match=expected):
            call()
    with pytest.raises(StoreError, match=f"or remove {settings.indices_dir} to start over"):
        engine.ingest([corpus])
    assert settings.store_path.exists() == (how == "empty")  # nothing was created in its place
    engine.close()


def test_the_cli_says_so_in_one_line_and_exit_2(
    settings: Settings, corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest_once(settings, corpus)
    _vanish(settings.store_path, "missing")
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    assert main(["--data-dir", str(settings.data_dir), "stats"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is missing but index v1 is live" in err


def test_a_store_deleted_while_open_fails_the_next_call_and_a_restored_one_is_reopened(
    engine: Engine, corpus: Path, tmp_path: Path
) -> None:
    engine.ingest([corpus])
    assert engine.query("soil").chunks
    store = engine.settings.store_path
    engine.store.close()  # a consistent copy to restore from (the WAL checkpointed)
    shutil.copy(store, tmp_path / "backup.sqlite3")
    assert engine.query("soil").chunks  # opened again
    os.unlink(store)
    with pytest.raises(StoreError, match="is missing but index v1 is live"):
        engine.query("soil")
    with pytest.raises(StoreError, match="is missing"):
        engine.stats()
    shutil.copy(tmp_path / "backup.sqlite3", store)
    assert engine.query("soil").chunks and engine.stats().documents == 2


def test_a_first_ingest_into_an_empty_data_dir_creates_the_store(engine: Engine, corpus: Path) -> None:
    assert not engine.settings.store_path.exists() and engine.stats().documents == 0
    engine.ingest([corpus])
    assert engine.stats().documents == 2


def test_a_store_deleted_before_any_index_is_a_new_start(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus], dry_run=True)
    engine.store.put_tokens("t", {"a" * 64: ["x"]})  # a store exists, no index yet
    engine.store.close()
    _vanish(engine.settings.store_path, "missing")
    engine.ingest([corpus])
    assert engine.stats().documents == 2
