"""Create the store's tables, or migrate an older schema, once, whoever asks first.

Two processes opening a new store at once (two first ingests) must not both create it: the loser
would read "table meta already exists", or find the tables before the schema version row and
call the store foreign. Creation and migration therefore run in one transaction that holds the
database's write lock (SQLite ``BEGIN IMMEDIATE``, a PostgreSQL transaction-scoped advisory lock),
and look again under it: the second process waits, then finds the finished schema.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

from hybrid_rag.errors import StoreError
from hybrid_rag.store.schema import (
    CODE_PARSE,
    CODE_PARSE_VERSION,
    GENERATION,
    LIVE,
    REFERENCES,
    REFERENCES_PENDING,
    SCHEMA_VERSION,
    SYMBOLS,
    SYMBOLS_PENDING,
    _Base,
)

_PG_LOCK = 0x6879627269645F72  # "hybrid_r": the advisory lock key store creation takes on PostgreSQL


def ensure_schema(engine: Engine, where: str, *, on_empty: Callable[[str], None] | None = None) -> None:
    """The store at ``engine`` holds schema ``SCHEMA_VERSION``: created or migrated here if need be;
    StoreError for a database written by another (newer, or foreign) schema. ``on_empty("empty")``
    is called before an empty database is created, to refuse it (a store file emptied under a live
    index is an error, not a new store)."""
    with engine.connect() as conn:
        if _found(conn) == str(SCHEMA_VERSION):
            return  # the common case: no lock taken, so opening never waits for a writer
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
        found = _found(conn)
        if found is None and on_empty is not None:
            on_empty("empty")
        if found is None:
            _Base.metadata.create_all(conn)
            conn.execute(
                text("INSERT INTO meta (key, value) VALUES ('schema_version', :v), (:g, '0'), (:c, :cv)"),
                {"v": str(SCHEMA_VERSION), "g": GENERATION, "c": CODE_PARSE, "cv": str(CODE_PARSE_VERSION)},
            )
            found = str(SCHEMA_VERSION)
        if found == "1":  # schema 1 had no metadata columns: add them, nothing else changes
            for table in ("documents", "chunks"):
                conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN meta TEXT")
            found = "2"
        if found == "2":  # schema 2 kept only the newest revision of a path: it had no retired rows
            conn.exec_driver_sql("ALTER TABLE documents ADD COLUMN retired INTEGER")
            conn.exec_driver_sql("DROP INDEX ix_documents_path")
            conn.exec_driver_sql("CREATE INDEX ix_documents_path ON documents (path)")
            conn.exec_driver_sql("CREATE INDEX ix_documents_retired ON documents (retired)")
            conn.exec_driver_sql(
                f"CREATE UNIQUE INDEX ix_documents_live_path ON documents (path) WHERE {LIVE}"
            )
            conn.execute(text("INSERT INTO meta (key, value) VALUES (:g, '0')"), {"g": GENERATION})
            found = "3"
        if found == "3":  # schema 3 had no vector checksums: old rows keep NULL (checked by norm)
            conn.exec_driver_sql("ALTER TABLE embeddings ADD COLUMN checksum BIGINT")
            found = "4"
        if found == "4":  # schema 4 dropped near-duplicates unstored and did not record created states
            conn.exec_driver_sql("ALTER TABLE chunks ADD COLUMN duplicate_of VARCHAR(64)")
            conn.exec_driver_sql("ALTER TABLE documents ADD COLUMN created INTEGER")
            found = "5"
        if found == "5":  # schema 5 had no chunk languages: each chunk's is detected here, once
            conn.exec_driver_sql("ALTER TABLE chunks ADD COLUMN lang VARCHAR(16) DEFAULT 'und'")
            conn.exec_driver_sql("CREATE INDEX ix_chunks_lang ON chunks (lang)")
            _detect_languages(conn)
            found = "6"
        if found == "6":  # schema 6 had no symbols: the table starts empty and the next ingest
            # rewrites its code files, unchanged ones too, to record their definitions (vectors cached)
            _Base.metadata.create_all(conn, tables=[SYMBOLS])
            conn.execute(text("INSERT INTO meta (key, value) VALUES (:k, '1')"), {"k": SYMBOLS_PENDING})
            found = "7"
        if found == "7":  # schema 7's version history named no data dir: on a shared store each
            # host read (and acted on) the other hosts' builds and rollbacks; old rows stay everyone's
            if "index_versions" not in inspect(conn).get_table_names():  # never built from
                _Base.metadata.create_all(conn, tables=[_Base.metadata.tables["index_versions"]])
            elif "host" not in {c["name"] for c in inspect(conn).get_columns("index_versions")}:
                conn.exec_driver_sql("ALTER TABLE index_versions ADD COLUMN host VARCHAR")
                conn.exec_driver_sql("CREATE INDEX ix_index_versions_host ON index_versions (host)")
            found = "8"
        if found == "8":  # schema 8 had no references: the table starts empty and the next ingest
            # rewrites the code files to record them, as for the symbols above (vectors cached)
            _Base.metadata.create_all(conn, tables=[REFERENCES])
            conn.execute(text("INSERT INTO meta (key, value) VALUES (:k, '1')"), {"k": REFERENCES_PENDING})
            found = "9"
        if found == str(SCHEMA_VERSION):
            conn.execute(
                text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(SCHEMA_VERSION)}
            )
        conn.commit()
    if found != str(SCHEMA_VERSION):
        raise StoreError(
            f"the store at {where} was written by schema {found or 'unknown'}, this version "
            f"reads schema {SCHEMA_VERSION}: ingest again into a new --data-dir"
        )


def _detect_languages(conn: Connection, batch: int = 2000) -> None:
    """Fill ``chunks.lang`` of a store migrated from schema 4 (about 0.3 ms a chunk)."""
    from hybrid_rag.lang.detect import detect_chunk_language

    rows = conn.execute(
        text("SELECT c.id, c.text, d.source_type FROM chunks c JOIN documents d ON d.id = c.document_id")
    ).all()
    found = [
        {"id": row[0], "lang": detect_chunk_language(row[1], code=row[2] == "code").code} for row in rows
    ]
    for start in range(0, len(found), batch):
        conn.execute(text("UPDATE chunks SET lang = :lang WHERE id = :id"), found[start : start + batch])


def _found(conn: Connection) -> str | None:
    """The schema version the database records; None for an empty database (no tables), ""
    for tables without a schema version (not a store of ours)."""
    tables = set(inspect(conn).get_table_names())
    if not tables:
        return None
    if "meta" not in tables:
        return ""
    value = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
    return "" if value is None else str(value)
