"""The version history is each data dir's own (schema 8, ``index_versions.host``): a store of
schema 7 migrates, its old rows still listed, and the rows written from then on name the data dir,
so on a shared store one host's builds never look like another host's newest entry."""

from __future__ import annotations

from pathlib import Path

from fake_settings import fake_settings

from hybrid_rag.engine import Engine


def test_a_schema_7_store_migrates_its_version_history_to_this_data_dirs(tmp_path: Path) -> None:
    import sqlite3

    from hybrid_rag.store.schema import SCHEMA_VERSION

    settings = fake_settings(tmp_path / "d")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nTomatoes need full sun.\n")
    engine = Engine(settings)
    engine.ingest([folder])
    engine.close()
    db = sqlite3.connect(settings.store_path)
    db.execute("DROP INDEX ix_index_versions_host")  # schema 8's
    db.execute("ALTER TABLE index_versions DROP COLUMN host")
    db.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    engine = Engine(settings)
    try:
        assert [v["version"] for v in engine.stats().versions] == [1]  # the old row: still listed
        (folder / "b.md").write_text("# B\n\nCompost improves drainage.\n")
        engine.ingest([folder])
        assert [v["version"] for v in engine.stats().versions] == [1, 2]
        engine.rollback(1)
        assert engine.rolled_back() and engine.finish_publication() is None
    finally:
        engine.close()
    db = sqlite3.connect(settings.store_path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    hosts = [h for (h,) in db.execute("SELECT host FROM index_versions ORDER BY id")]
    db.close()
    assert hosts[0] is None and all(
        h and h.endswith(str((tmp_path / "d" / "indices").resolve())) for h in hosts[1:]
    )
