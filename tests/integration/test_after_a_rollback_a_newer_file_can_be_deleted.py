"""After `rollback N` a file only newer versions hold is not served but stays in the store, and the
next write publishes it again: `rollback` says so, `delete` takes it (it answered "no document", so
it came back for good), and what the rolled-back version serves keeps its chunks' languages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

OPS = (
    "# Ops\n\nRestart the frobnicator with systemctl restart frob. Check the logs in the folder every day.\n"
)
OPS_EDITED = "# Ops\n\nNothing here about services any more. See the wiki instead, it has all of it now.\n"
RU = "# Сад\n\nПомидоры любят солнце и регулярный полив. Удаляйте пасынки вовремя.\n"
NEW = "# Penguins\n\nA brand new file about penguins and their habits in the cold southern seas.\n"


@pytest.fixture
def rolled_back(cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ops.md").write_text(OPS)
    (root / "ru.md").write_text(RU)
    assert cli("ingest", str(root)) == 0
    (root / "ops.md").write_text(OPS_EDITED)
    (root / "new.md").write_text(NEW)
    assert cli("ingest", str(root)) == 0
    capsys.readouterr()
    assert cli("rollback", "1") == 0
    return root


def _documents(cli, capsys: pytest.CaptureFixture[str]) -> dict[str, dict]:
    capsys.readouterr()
    assert cli("documents", "--json") == 0
    return {r["path"]: r for r in json.loads(capsys.readouterr().out)["documents"]}


def test_rollback_names_the_files_that_return_at_the_next_write(rolled_back, cli, capsys) -> None:
    # the rollback fixture's own output
    capsys.readouterr()
    assert cli("rollback", "1") == 0
    err = capsys.readouterr().err
    assert "1 stored document(s) this version does not hold return at the next write (new.md)" in err
    assert "hybrid-rag delete PATH" in err


def test_a_deleted_newer_file_does_not_return_at_the_next_write(rolled_back, cli, capsys, tmp_path) -> None:
    assert set(_documents(cli, capsys)) == {"ops.md", "ru.md"}  # v1's files
    (rolled_back / "new.md").rename(tmp_path / "new.md")  # the file left the folder as well
    assert cli("delete", "new.md") == 0  # was: "no document 'new.md'", exit 2
    assert "deleted new.md" in capsys.readouterr().out
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("# X\n\nSomething else entirely about sailing boats and wind.\n")
    assert cli("ingest", str(other)) == 0  # a write: publishes the store's present
    assert not any(p.endswith("new.md") for p in _documents(cli, capsys))


def test_the_rolled_back_version_keeps_its_chunks_languages(rolled_back, cli, capsys) -> None:
    docs = _documents(cli, capsys)
    assert docs["ops.md"]["languages"] == {"en": 1}  # v1's revision of ops.md (was: {} after the rollback)
    assert docs["ru.md"]["languages"] == {"ru": 1}
    capsys.readouterr()
    assert cli("stats", "--json") == 0
    assert json.loads(capsys.readouterr().out)["languages"] == {"en": 1, "ru": 1}
