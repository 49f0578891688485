"""hybrid-rag's own files are never ingested wherever they are: another data dir met in a walk (a
project's default ``./data``), the configured keys file, indices, store and logs set outside the
data dir, any ``api_keys`` file, and a hard link to a protected file (same device and inode)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError

SECRET = "swordfish-secret-key-0123456789"


def _engine(tmp_path: Path, **overrides: object) -> Engine:
    settings = fake_settings(tmp_path / "home", {**overrides})
    return Engine(settings)


def _leaks(engine: Engine) -> list[str]:
    found = engine.query(SECRET, mode="bm25").chunks
    return [c.path for c in found if SECRET in c.text]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "readme.md").write_text("# Project\n\nA project about rivers and bridges.\n")
    return root


def _other_data_dir(folder: Path) -> Path:
    """A data dir another hybrid-rag made: store, indices/CURRENT, keys, query log."""
    other = _engine(folder.parent.parent, **{"paths.data_dir": str(folder)})
    note = folder.parent.parent / "maker-notes"
    note.mkdir(parents=True)
    (note / "n.md").write_text(f"# Logged\n\nthe query log holds {SECRET}\n")
    other.ingest([note])
    other.query(SECRET, log=True)
    other.close()
    (folder / "api_keys").write_text(f"{SECRET}\n")
    assert (folder / "indices" / "CURRENT").is_file() and (folder / "store.sqlite3").is_file()
    return folder


def test_another_data_dir_in_the_folder_is_skipped(tmp_path: Path, project: Path) -> None:
    _other_data_dir(project / "data")
    engine = _engine(tmp_path)
    report = engine.ingest([project])
    assert [Path(p).name for p in report.plan.added] == ["readme.md"]
    reasons = {Path(s.path).name: s.reason for s in report.plan.skipped}
    assert "another hybrid-rag data dir" in reasons["data"]
    assert _leaks(engine) == []
    with pytest.raises(InputError, match="another hybrid-rag data dir"):
        engine.ingest([project / "data"])
    with pytest.raises(InputError, match="inside .*data, another hybrid-rag data dir"):
        engine.ingest([project / "data" / "logs"])
    engine.close()


def test_a_file_named_api_keys_is_skipped_anywhere(tmp_path: Path, project: Path) -> None:
    (project / "deploy").mkdir()
    (project / "deploy" / "api_keys").write_text(f"# keys\n{SECRET}\n")
    engine = _engine(tmp_path)
    report = engine.ingest([project])
    reasons = {Path(s.path).name: s.reason for s in report.plan.skipped}
    assert reasons["api_keys"].startswith("an API keys file")
    assert _leaks(engine) == []
    engine.close()


def test_the_configured_keys_file_is_skipped(tmp_path: Path, project: Path) -> None:
    keys = project / "secrets.txt"
    keys.write_text(f"{SECRET}\n")
    engine = _engine(tmp_path, **{"server.api_keys_file": str(keys)})
    report = engine.ingest([project])
    assert [Path(p).name for p in report.plan.added] == ["readme.md"]
    assert _leaks(engine) == []
    with pytest.raises(InputError, match="own file"):
        engine.ingest([keys])
    engine.close()


def test_indices_store_and_logs_set_outside_the_data_dir_are_skipped(tmp_path: Path, project: Path) -> None:
    engine = _engine(
        tmp_path,
        **{
            "paths.indices_path": str(project / "idx"),
            "paths.store_file": str(project / "meta.db"),
            "paths.logs_path": str(project / "logs"),
        },
    )
    engine.ingest([project])
    engine.query(SECRET, log=True)  # the query log, outside the data dir, now holds the secret
    assert SECRET in (project / "logs" / "queries.jsonl").read_text()
    (project / "more.md").write_text("# More\n\nmore about rivers\n")
    report = engine.ingest([project])
    assert [Path(p).name for p in report.plan.added] == ["more.md"]
    stored = {Path(d.path).name for d in engine.documents()}
    assert stored == {"readme.md", "more.md"}
    assert _leaks(engine) == []
    engine.close()


def test_a_hard_link_to_the_keys_file_is_skipped(tmp_path: Path, project: Path) -> None:
    engine = _engine(tmp_path)
    home = engine.settings.data_dir
    home.mkdir(parents=True, exist_ok=True)
    (home / "api_keys").write_text(f"{SECRET}\n")
    os.link(home / "api_keys", project / "notes.md")
    report = engine.ingest([project])
    assert [Path(p).name for p in report.plan.added] == ["readme.md"]
    reason = {Path(s.path).name: s.reason for s in report.plan.skipped}["notes.md"]
    assert reason.startswith("a hard link to hybrid-rag's") and "api_keys" in reason
    assert _leaks(engine) == []
    with pytest.raises(InputError, match="hard link"):
        engine.ingest([project / "notes.md"])
    engine.close()
