"""A chunk dropped as a near-duplicate is kept in the store, unindexed, and comes back when what it
duplicated is deleted or edited; deduplication never crosses a collection or the metadata a filter
selects by."""

from __future__ import annotations

from pathlib import Path

from fake_settings import fake_settings

from hybrid_rag.engine import Engine

BODY = (
    "The rotor blade tip vortex interacts with the following blade and raises the noise of the "
    "helicopter in descent, a flow that the wind tunnel measured at several advance ratios.\n"
)


def _engine(tmp_path: Path, **overrides: object) -> Engine:
    return Engine(fake_settings(tmp_path / "data", {**overrides}))


def _paths(engine: Engine, text: str, **kwargs: object) -> list[str]:
    return [c.path for c in engine.query(text, top_k=5, mode="bm25", absolute_paths=True, **kwargs).chunks]


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.md").write_text(BODY)
    (root / "b.md").write_text(BODY)
    return root


def test_deleting_the_kept_copy_brings_the_duplicate_back(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    engine = _engine(tmp_path)
    report = engine.ingest([root])
    assert len(report.duplicates) == 1
    assert engine.store.chunk_count() == 1
    a, b = (str((root / n).resolve()) for n in ("a.md", "b.md"))
    dropped = report.duplicates[0].path

    engine.delete([a if dropped == b else b])
    kept = b if dropped == b else a
    assert _paths(engine, "rotor blade tip vortex") == [kept]
    assert engine.store.chunk_count() == 1
    engine.close()


def test_an_ingest_after_the_kept_file_is_removed_brings_the_duplicate_back(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    engine = _engine(tmp_path)
    engine.ingest([root])
    (root / "a.md").unlink()
    report = engine.ingest([root])
    assert report.embedded <= 1  # b.md's one chunk, nothing else
    assert _paths(engine, "rotor blade tip vortex") == [str((root / "b.md").resolve())]
    engine.close()


def test_an_edit_of_the_kept_file_brings_the_duplicate_back(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    engine = _engine(tmp_path)
    engine.ingest([root])
    (root / "a.md").write_text("Something else entirely about gardens and tomatoes in the shade.\n")
    engine.ingest([root])
    assert _paths(engine, "rotor blade tip vortex") == [str((root / "b.md").resolve())]
    assert engine.store.chunk_count() == 2
    engine.close()


def test_the_same_file_in_two_collections_is_found_in_each(tmp_path: Path) -> None:
    one, two = tmp_path / "teamA", tmp_path / "teamB"
    one.mkdir()
    two.mkdir()
    (one / "a.md").write_text(BODY)
    (two / "a.md").write_text(BODY)
    engine = _engine(tmp_path)
    engine.ingest([one], collection="teamA")
    report = engine.ingest([two], collection="teamB")
    assert report.duplicates == ()
    for team in ("teamA", "teamB"):
        assert _paths(engine, "rotor blade tip vortex", filters=f"collection={team}") == [
            str((tmp_path / team / "a.md").resolve())
        ]
    engine.close()


def test_documents_with_other_metadata_are_not_deduplicated(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.md").write_text("---\nteam: red\n---\n" + BODY)
    (root / "b.md").write_text("---\nteam: blue\n---\n" + BODY)
    engine = _engine(tmp_path)
    engine.ingest([root])
    assert _paths(engine, "rotor blade tip vortex", filters="meta.team=blue") == [
        str((root / "b.md").resolve())
    ]
    engine.close()


def test_rebuild_after_the_delete_restores_the_duplicate(tmp_path: Path) -> None:
    """A delete killed before it revived the duplicate: rebuild finishes it, embedding no more than it."""
    root = _corpus(tmp_path)
    engine = _engine(tmp_path)
    report = engine.ingest([root])
    kept = next(
        p for p in (str((root / n).resolve()) for n in ("a.md", "b.md")) if p != report.duplicates[0].path
    )
    engine.store.write_files([], collection="default", delete_paths=[kept])  # the store half of a delete
    build = engine.rebuild()
    assert build.chunks == 1 and build.embedded <= 1  # its own text: cached
    assert _paths(engine, "rotor blade tip vortex") == [report.duplicates[0].path]
    engine.close()
