"""``hybrid-rag status`` lists the files changed, new and deleted on disk since the index was
built, walking the ingested root by ingest's rules (skipped kinds and ignore lists are not
"new"), by size and mtime first and hashing only what moved (``ingest/status.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine


def _touch(path: Path, seconds: int) -> None:
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def test_status_lists_changed_new_and_deleted(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (corpus / "notes.txt").write_text("Notes on the garden shed.\n")
    engine.ingest([corpus])
    with monkeypatch.context() as m:  # an unchanged tree is confirmed by stat alone: nothing read
        read = Path.read_bytes

        def read_outside_corpus(self: Path) -> bytes:
            assert not self.resolve().is_relative_to(corpus.resolve()), f"read {self}"
            return read(self)

        m.setattr(Path, "read_bytes", read_outside_corpus)
        clean = engine.disk_status()
    assert clean.clean and clean.unchanged == 3 and clean.hashed == 0
    assert clean.summary().startswith("up to date since the index was built (3 unchanged file(s)")
    garden = corpus / "docs" / "garden.md"
    garden.write_text(garden.read_text() + "\nEdited.\n")
    (corpus / "src" / "shapes.py").write_text("def square(side):\n    return side * side\n")
    (corpus / "notes.txt").unlink()
    _touch(corpus / "src" / "geometry.py", 9)  # moved mtime, same bytes: hashed, unchanged
    (corpus / "node_modules").mkdir()
    (corpus / "node_modules" / "lib.js").write_text("module.exports = 1;\n")  # ignored by ingest
    (corpus / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")  # skipped by ingest
    found = engine.disk_status()
    assert found.changed == ("docs/garden.md",)
    assert found.new == ("src/shapes.py",)
    assert found.deleted == ("notes.txt",)
    assert found.unchanged == 1 and found.hashed == 1
    assert found.summary().startswith("1 changed, 1 new, 1 deleted since the index was built")
    assert engine.ingest([corpus]).plan.added == (str(corpus / "src" / "shapes.py"),)  # ingest agrees
    after = engine.disk_status()
    assert after.clean and after.unchanged == 3


def test_the_cli_prints_it_and_exits_0(
    settings, corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    args = ["--data-dir", str(settings.data_dir)]
    engine = Engine(settings)
    engine.ingest([corpus])
    engine.close()
    (corpus / "docs" / "garden.md").write_text("# Gardening notes\n\nRewritten.\n")
    capsys.readouterr()
    assert main([*args, "status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["changed", "docs/garden.md"]
    assert out[-1].startswith("1 changed, 0 new, 0 deleted since the index was built")
    assert main([*args, "status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["changed"] == ["docs/garden.md"] and data["new"] == [] and data["clean"] is False
    assert data["roots"] == [str(corpus)]
