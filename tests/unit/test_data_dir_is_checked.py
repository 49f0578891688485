"""A data dir that is a file, sits under a file, or cannot be written is one line and exit 2."""

from __future__ import annotations

import pytest
from fake_settings import fake_settings

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import StoreError


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "not-a-folder"
    path.write_text("x")
    return path


@pytest.mark.parametrize("command", [["stats"], ["versions"], ["query", "soil"], ["ingest", "."]])
def test_a_file_as_data_dir(a_file, command, capsys) -> None:
    assert main(["--data-dir", str(a_file), *command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the data dir {a_file} is not a folder" in err


def test_a_data_dir_under_a_file(a_file, corpus, capsys) -> None:
    assert main(["--data-dir", str(a_file / "sub"), "ingest", str(corpus)]) == 2
    assert f"cannot be made: {a_file} is not a folder" in capsys.readouterr().err


def test_home_pointing_at_a_file(a_file, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HYBRID_RAG_HOME", str(a_file))
    assert main(["stats"]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_a_read_only_data_dir(tmp_path, corpus, monkeypatch, capsys) -> None:
    import hybrid_rag.store.sessions as store_module

    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(store_module.os, "access", lambda path, mode: False)  # root writes anywhere
    assert main(["--data-dir", str(ro), "ingest", str(corpus)]) == 2
    assert "is not writable" in capsys.readouterr().err
    assert main(["--data-dir", str(ro / "new"), "ingest", str(corpus)]) == 2
    assert f"cannot be made: {ro} is not writable" in capsys.readouterr().err


def test_the_python_api_says_the_same(a_file) -> None:
    engine = Engine(fake_settings(a_file))
    with pytest.raises(StoreError, match="is not a folder"):
        engine.ingest(["."])
