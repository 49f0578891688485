"""A damaged index pointer or version is one clear line naming what is wrong, and the recovery
that line suggests works: `rebuild` whatever ``CURRENT`` holds (the next version number comes from
the version folders, never from the pointer), and `rollback` only onto a version that loads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.versions import MAX_VERSION, IndexVersions, parse_pointer
from hybrid_rag.settings import Settings

CORRUPT_POINTERS = {
    "text": (b"abc", "holds 'abc'"),
    "empty": (b"", "is empty"),
    "negative": (b"-1", "holds '-1'"),
    "binary": (b"\xff\xfe\x00\x81", "4 bytes that are not text"),
    "huge": (b"9" * 24, "not a version number"),
    "zero": (b"0", "not a version number"),
}


@pytest.mark.parametrize(
    ("raw", "version"), [(b"7", 7), (b" 12\n", 12), (str(MAX_VERSION).encode(), MAX_VERSION)]
)
def test_a_pointer_holds_one_version_number(raw: bytes, version: int) -> None:
    assert parse_pointer(raw) == version


@pytest.mark.parametrize("case", sorted(CORRUPT_POINTERS))
def test_a_corrupt_pointer_is_one_line_and_rebuild_repairs_it(
    engine: Engine, corpus: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.ingest([corpus])
    raw, problem = CORRUPT_POINTERS[case]
    pointer = engine.settings.indices_dir / "CURRENT"
    pointer.write_bytes(raw)
    args = ["--data-dir", str(engine.settings.data_dir)]
    os.environ["HYBRID_RAG_EMBEDDING__MODEL"] = "fake"
    try:
        assert main([*args, "query", "soil"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and problem in err and "CURRENT" in err and "unexpected" not in err
        assert main([*args, "rebuild"]) == 0
        assert main([*args, "query", "soil"]) == 0
    finally:
        del os.environ["HYBRID_RAG_EMBEDDING__MODEL"]
    assert IndexVersions(engine.settings.indices_dir).versions() == [1, 2]
    assert pointer.read_text().strip() == "2"


def test_a_folder_in_place_of_the_pointer_is_named_and_rebuild_repairs_it(
    engine: Engine, corpus: Path
) -> None:
    engine.ingest([corpus])
    pointer = engine.settings.indices_dir / "CURRENT"
    pointer.unlink()
    pointer.mkdir()
    with pytest.raises(CorruptIndexError, match="CURRENT is a folder"):
        engine.query("soil")
    assert engine.rebuild().version == 2
    assert engine.query("soil").chunks and pointer.is_file()


def test_a_huge_pointer_never_numbers_the_next_version(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    (engine.settings.indices_dir / "CURRENT").write_text("9" * 24 + "\n")
    (engine.settings.indices_dir / ("v1" + "0" * 23)).mkdir()  # a folder left by the old crash
    assert engine.rebuild().version == 2
    assert engine.stats().live_version == 2


def test_an_ingest_over_a_corrupt_pointer_builds_from_scratch(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    (engine.settings.indices_dir / "CURRENT").write_text("abc")
    (corpus / "docs" / "birds.md").write_text("# Birds\n\nSwallows migrate south in autumn.\n")
    report = engine.ingest([corpus])
    assert report.build is not None and report.build.version == 2
    assert any("birds.md" in c.path for c in engine.query("swallows migrate").chunks)


def test_a_pointer_naming_a_version_not_on_disk_says_so(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    (engine.settings.indices_dir / "CURRENT").write_text("5\n")
    with pytest.raises(CorruptIndexError, match="version 5 is not on disk"):
        engine.query("soil")


def _shared_segment(engine: Engine, corpus: Path) -> Path:
    """Two versions whose BM25 share one hard-linked segment file; that file corrupted."""
    for i in range(6):  # a base large enough that one more file is a delta segment, not a merge
        (corpus / "docs" / f"notes{i}.md").write_text(f"# Notes {i}\n\nEntry {i} about pruning roses.\n")
    engine.ingest([corpus])
    (corpus / "docs" / "birds.md").write_text("# Birds\n\nSwallows migrate south in autumn.\n")
    engine.ingest([corpus])
    versions = IndexVersions(engine.settings.indices_dir)
    first, second = (versions.directory(v) for v in versions.versions())
    shared = [
        p
        for p in first.rglob("*")
        if p.is_file() and (second / p.relative_to(first)).is_file() and p.stat().st_nlink > 1
    ]
    assert shared, "the second version links none of the first one's BM25 files"
    data = bytearray(shared[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    shared[0].write_bytes(bytes(data))  # written in place: both links see it
    return shared[0]


def test_rollback_refuses_a_version_that_cannot_load(settings: Settings, corpus: Path) -> None:
    engine = Engine(settings.with_overrides({"bm25.merge_fraction": 1.0}))
    damaged = _shared_segment(engine, corpus)
    with pytest.raises(CorruptIndexError, match="rollback"):
        engine.query("soil")
    with pytest.raises(CorruptIndexError, match=f"cannot roll back to version 1.*{damaged.name}"):
        engine.rollback(1)
    assert IndexVersions(engine.settings.indices_dir).current() == 2
    assert engine.rebuild().version == 3  # the recovery that does work
    assert engine.query("soil").chunks
    engine.close()
