"""The symbols table holds every definition of the ingested code, tied to its document and chunk:
an ingest records them, a changed file replaces them, a deleted file removes them, and a reader
of an older store state (an older index version) still sees the ones it indexed."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

POOL = textwrap.dedent(
    '''\
    class ConnectionPool:
        """A pool of open connections. They are reused."""

        def get(self, timeout: float = 1.0) -> int:
            """Take a connection from the pool."""
            return 1


    def parse_filter(text: str) -> list:
        return [text]
    '''
)


def _names(engine: Engine, **kwargs: object) -> list[str]:
    return [s.qualified_name for s in engine.store.symbols(**kwargs)]


def test_ingest_records_each_definition_with_its_lines_doc_and_chunk(tmp_path: Path, engine: Engine) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pool.py").write_text(POOL)
    (tmp_path / "README.md").write_text("# Pool\n\nConnectionPool keeps connections.\n")
    engine.ingest([tmp_path])
    symbols = engine.store.symbols()
    assert [(s.qualified_name, s.kind) for s in symbols] == [
        ("ConnectionPool", "class"),
        ("ConnectionPool.get", "method"),
        ("parse_filter", "function"),
    ]
    pool, get, parse = symbols
    assert (pool.start_line, pool.end_line) == (1, 6)
    assert pool.doc == "A pool of open connections."
    assert get.parent == "ConnectionPool" and get.signature.startswith("def get(self, timeout: float = 1.0)")
    assert parse.start_line == 9 and parse.doc == ""
    chunks = engine.store.chunks([s.chunk_id for s in symbols if s.chunk_id is not None])
    for s in symbols:
        chunk = chunks[s.chunk_id]
        assert chunk.path == s.path and chunk.start_line <= s.start_line <= chunk.end_line
    assert engine.store.symbol_count() == 3


def test_a_changed_file_replaces_its_symbols_and_a_deleted_file_removes_them(
    tmp_path: Path, engine: Engine
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "pool.py").write_text(POOL)
    (src / "other.py").write_text("def helper():\n    return 2\n")
    engine.ingest([src])
    first_state = engine.store.generation()
    (src / "pool.py").write_text(POOL.replace("parse_filter", "parse_query"))
    engine.ingest([src])
    assert "parse_query" in _names(engine) and "parse_filter" not in _names(engine)
    assert _names(engine).count("ConnectionPool") == 1  # the old revision's rows are not current
    assert "parse_filter" in _names(engine, state=first_state)  # an older version still sees its own
    assert "parse_query" not in _names(engine, state=first_state)
    engine.delete([str((src / "pool.py").resolve())])
    assert _names(engine) == ["helper"]


def test_a_store_from_schema_6_records_its_symbols_at_the_next_ingest(
    tmp_path: Path, settings: Settings
) -> None:
    import sqlite3

    from hybrid_rag.store.schema import SCHEMA_VERSION

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def f():\n    return 1\n")
    (tmp_path / "src" / "notes.md").write_text("# Notes\n")
    engine = Engine(settings)
    engine.ingest([tmp_path / "src"])
    engine.close()
    db = sqlite3.connect(settings.store_path)
    db.execute("DROP TABLE symbols")
    db.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    engine = Engine(settings)
    assert engine.store.symbol_count() == 0 and engine.store.symbols_pending()  # migrated, empty
    assert engine.query("f").chunks  # the store still answers
    report = engine.ingest([tmp_path / "src"])  # nothing changed on disk
    assert report.plan.changed == (str((tmp_path / "src" / "a.py").resolve()),)  # the code file only
    assert report.embedded == 0  # its vectors came from the cache
    assert _names(engine) == ["f"] and not engine.store.symbols_pending()
    assert not engine.ingest([tmp_path / "src"]).plan.changed  # once
    db = sqlite3.connect(settings.store_path)
    version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert version == str(SCHEMA_VERSION)
    db.close()
    engine.close()
