"""The data dir (store, indices, API keys, logs, uploads) is never ingested: named directly, reached
through a link, or walked from a folder above it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_settings import fake_settings

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError


@pytest.fixture
def engine(tmp_path: Path):
    settings = fake_settings(tmp_path / "data", {"loading.follow_symlinks": "outside"})
    data = settings.data_dir
    data.mkdir()
    (data / "api_keys").write_text("sk-secret-key-swordfish\n")
    (tmp_path / "notes.md").write_text("# Notes\n\nA note about bees and flowers.\n")
    eng = Engine(settings)
    eng.ingest([tmp_path / "notes.md"])
    yield eng
    eng.close()


def test_naming_the_data_dir_or_a_file_in_it_is_refused(engine: Engine) -> None:
    data = engine.settings.data_dir
    for path in (data / "api_keys", data, data / "indices"):
        with pytest.raises(InputError, match="data dir"):
            engine.ingest([path])
    assert not engine.query("swordfish", mode="bm25").chunks


def test_the_cli_refuses_it_with_exit_2(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    data = engine.settings.data_dir
    engine.close()
    code = main(["--data-dir", str(data), "ingest", str(data / "api_keys")])
    assert code == 2 and "never ingested" in capsys.readouterr().err


def test_a_link_into_the_data_dir_is_skipped(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "keys.md").symlink_to(engine.settings.data_dir / "api_keys")
    (folder / "home").symlink_to(engine.settings.data_dir, target_is_directory=True)
    (folder / "real.md").write_text("# Real\n\nA real document about rivers.\n")
    report = engine.ingest([folder])
    assert [Path(p).name for p in report.plan.added] == ["real.md"]
    assert not engine.query("swordfish", mode="bm25").chunks
