"""Two data dirs (two hosts) on one PostgreSQL store, as docs/scale-out.md sets them up: one host's
garbage collection keeps every row the other host's live version reads, so that host keeps serving
exactly what it indexed (and its stats say the store is ahead), and a host whose rows are gone
anyway says it is stale instead of answering with other files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_settings import fake_settings
from pg_server import fresh_database
from sqlalchemy import create_engine, text

from hybrid_rag.engine import Engine
from hybrid_rag.errors import StoreError

pytestmark = pytest.mark.integration

OLD = "# Ops\n\nRestart the frobnicator with systemctl restart frob.\n"
NEW = "# Ops\n\nNothing here about services any more.\n"


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_database() as u:
        yield u


def _host(tmp_path: Path, name: str, url: str, keep: int = 1) -> Engine:
    return Engine(
        fake_settings(
            tmp_path / name, {"store.url": url, "paths.keep_versions": keep, "features.expansion": False}
        )
    )


def _top_text(engine: Engine) -> str:
    return engine.query("restart the frobnicator", top_k=1, mode="bm25").chunks[0].chunk.text


def test_one_hosts_pruning_keeps_what_the_other_host_serves(tmp_path: Path, url: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ops.md").write_text(OLD)
    a, b = _host(tmp_path, "a", url), _host(tmp_path, "b", url)
    try:
        a.ingest([docs])
        b.rebuild()  # host B builds its own version from the shared store
        (docs / "ops.md").write_text(NEW)
        a.ingest([docs])  # A's v2; keep_versions 1 prunes A's v1 and collects its rows
        assert "frobnicator" in _top_text(b)  # B's version still reads the text it indexed
        stats = b.stats()
        assert stats.index_behind_store and stats.documents == 1
        assert a.store.old_revisions()["documents"] == 1  # kept for B
        b.rebuild()  # B catches up: no live version reads the old rows any more, they go
        assert b.store.old_revisions()["documents"] == 0
        assert not b.query("restart the frobnicator", top_k=1, mode="bm25").chunks
    finally:
        a.close()
        b.close()


def test_a_host_whose_rows_are_gone_says_it_is_stale(tmp_path: Path, url: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ops.md").write_text(OLD)
    a, b = _host(tmp_path, "a", url), _host(tmp_path, "b", url)
    try:
        a.ingest([docs])
        b.rebuild()
        (docs / "ops.md").write_text(NEW)
        a.ingest([docs])
        db = create_engine(url)
        with db.begin() as conn:  # rows lost anyway (a host's registration removed by hand)
            conn.execute(text("DELETE FROM meta WHERE key LIKE 'reader:%'"))
            conn.execute(text("DELETE FROM documents WHERE retired IS NOT NULL"))  # chunks cascade
        db.dispose()
        with pytest.raises(StoreError, match="rebuild"):
            b.query("restart the frobnicator", top_k=1, mode="bm25")
    finally:
        a.close()
        b.close()


def test_one_hosts_write_does_not_undo_the_other_hosts_rollback(tmp_path: Path, url: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ops.md").write_text(OLD)
    a, b = _host(tmp_path, "a", url), _host(tmp_path, "b", url, keep=3)
    try:
        a.ingest([docs])
        b.rebuild()  # B's v1: the old text
        (docs / "ops.md").write_text(NEW)
        a.ingest([docs])
        b.rebuild()  # B's v2: the new text
        b.rollback(1)  # B serves the old text again, on purpose
        (docs / "garden.md").write_text("# Garden\n\nTomatoes need full sun.\n")
        a.ingest([docs])  # A's next write: the newest entry of a shared history was A's
        stats = b.stats()  # it published the store's present on B, undoing B's rollback
        assert stats.live_version == 1 and stats.index_behind_store
        assert stats.behind.startswith("rolled back to v1")
        assert "frobnicator" in _top_text(b)
        assert {r["version"] for r in stats.versions} == {1, 2}  # B's own history, not A's builds too
        assert [r["status"] for r in stats.versions].count("rolled back to") == 1
        assert all(r["status"] != "rolled back to" for r in a.stats().versions)  # A never rolled back
    finally:
        a.close()
        b.close()
