"""``store.url``: the metadata store behind any SQLAlchemy URL (tested against SQLite here; PostgreSQL
is the documented multi-node choice), the SQLite file in the data dir without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError, StoreError
from hybrid_rag.settings import Settings, load_settings
from hybrid_rag.store import MetadataStore


def test_without_a_url_the_store_is_the_sqlite_file_in_the_data_dir(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    assert engine.store.url == f"sqlite:///{engine.settings.store_path}"
    assert engine.settings.store_path.is_file()


def test_a_url_puts_the_store_where_it_says(settings: Settings, corpus: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "db" / "shared.sqlite3"
    elsewhere.parent.mkdir()
    engine = Engine(settings.with_overrides({"store.url": f"sqlite:///{elsewhere}"}))
    try:
        engine.ingest([corpus])
        assert engine.query("compost clay soil", top_k=1).chunks[0].chunk.path.endswith("garden.md")
        assert engine.stats().chunks == 2
    finally:
        engine.close()
    assert elsewhere.is_file() and not settings.store_path.exists()
    assert MetadataStore(tmp_path / "unused", url=f"sqlite:///{elsewhere}").chunk_count() == 2


def test_a_bad_url_is_one_line_naming_the_key_or_the_store(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="store.url"):
        load_settings(None, environ={"HYBRID_RAG_STORE__URL": "not a url"})
    store = MetadataStore(tmp_path / "x", url="postgresql+nosuchdriver://user:secret@db.example/rag")
    with pytest.raises(
        StoreError, match=r"cannot open the store at postgresql\+nosuchdriver://user:\*\*\*@db"
    ):
        store.chunk_count()
