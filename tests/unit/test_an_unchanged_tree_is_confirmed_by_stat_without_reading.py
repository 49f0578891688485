"""A re-ingest confirms an unchanged file by its recorded size and mtime without reading it; a
file whose mtime moved is read (and written again only when its bytes changed); an ingest with
attached metadata reads every file, since its hash covers the metadata."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine


def _reads(monkeypatch: pytest.MonkeyPatch, corpus: Path) -> list[str]:
    """Every file of ``corpus`` read through ``Path.read_bytes`` from now on."""
    read, seen = Path.read_bytes, []

    def counted(self: Path) -> bytes:
        if self.resolve().is_relative_to(corpus.resolve()):
            seen.append(self.name)
        return read(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    return seen


def test_an_unchanged_reingest_reads_no_file(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ingest([corpus])
    reads = _reads(monkeypatch, corpus)
    again = engine.ingest([corpus])
    assert not again.plan.has_changes and len(again.plan.unchanged) == 2
    assert reads == []
    geometry = corpus / "src" / "geometry.py"
    st = os.stat(geometry)
    os.utime(geometry, ns=(st.st_atime_ns, st.st_mtime_ns + 3_000_000_000))  # touched
    touched = engine.ingest([corpus])
    assert reads == ["geometry.py"] and not touched.plan.has_changes
    garden = corpus / "docs" / "garden.md"
    garden.write_text(garden.read_text().replace("Tomatoes", "Potatoes"))  # same size
    st = os.stat(garden)
    os.utime(garden, ns=(st.st_atime_ns, st.st_mtime_ns + 3_000_000_000))
    edited = engine.ingest([corpus])
    assert edited.plan.changed == (str(garden),)
    assert any("Potatoes" in sc.text for sc in engine.query("potatoes full sun").chunks)


def test_metadata_makes_every_file_read(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ingest([corpus])
    reads = _reads(monkeypatch, corpus)
    tagged = engine.ingest([corpus], metadata={"team": "search"})
    assert sorted(tagged.plan.changed) == sorted(str(p) for p in corpus.rglob("*.*"))
    assert sorted(set(reads)) == ["garden.md", "geometry.py"]
