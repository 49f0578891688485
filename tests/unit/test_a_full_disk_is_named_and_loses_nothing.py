"""A full disk is one line naming the disk and what was kept, never "unexpected OperationalError"
(issue 25.7); nothing committed is lost; and a query log that cannot be written is a warning on
stderr, once, while the queries keep answering. The disk is filled by SQLite's own page limit
(a real SQLITE_FULL) or by a write that raises ENOSPC."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from sqlalchemy import event

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import DiskFullError, disk_full, is_disk_full
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.versions import IndexVersions
from hybrid_rag.querylog import QueryLog

BIRDS = "# Birds\n\n" + "\n".join(f"Swallow {i} migrates south in autumn over the sea." for i in range(400))


def _enospc(*_args: object, **_kwargs: object) -> int:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_errors_are_recognised_however_wrapped() -> None:
    import sqlite3

    from sqlalchemy.exc import OperationalError

    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(OperationalError("INSERT", {}, sqlite3.OperationalError("database or disk is full")))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(ValueError("disk"))


def test_the_message_names_the_mount_and_what_was_kept(tmp_path: Path) -> None:
    message = str(disk_full(tmp_path / "data", "the store keeps its last commit"))
    assert f"writing {tmp_path / 'data'}" in message and "mounted at /" in message
    assert "MiB free" in message and "the store keeps its last commit" in message


def test_a_query_log_that_cannot_be_written_warns_once_and_queries_answer(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.ingest([corpus])
    monkeypatch.setattr("hybrid_rag.querylog.os.write", _enospc)
    for _ in range(3):
        assert engine.query("soil", log=True).chunks
    context, _ = engine.context("soil", log=True)
    assert context.sources
    err = capsys.readouterr().err
    assert err.count("warning: the query log") == 1 and "No space left on device" in err


def test_a_query_log_that_can_be_written_again_logs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = QueryLog(tmp_path / "logs" / "queries.jsonl")
    with monkeypatch.context() as patch:
        patch.setattr("hybrid_rag.querylog.os.write", _enospc)
        log.append({"query": "lost"})
    log.append({"query": "kept"})
    assert log.path.read_text().strip() == '{"query":"kept"}'


def _fill_the_store(engine: Engine) -> None:
    """From now on the store file cannot grow by a page: SQLite answers SQLITE_FULL."""
    sql = engine.store._engine
    assert sql is not None

    @event.listens_for(sql, "connect")
    def _limit(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count={pages}")

    sql.dispose()


def test_an_ingest_into_a_full_store_is_one_line_and_keeps_what_was_there(
    engine: Engine, corpus: Path
) -> None:
    engine.ingest([corpus])
    before = engine.stats()
    _fill_the_store(engine)
    (corpus / "docs" / "birds.md").write_text(BIRDS)
    with pytest.raises(DiskFullError, match="no space left on the disk mounted at .* keeps its last commit"):
        engine.ingest([corpus])
    after = engine.stats()
    assert (after.documents, after.chunks, after.live_version) == (before.documents, before.chunks, 1)
    assert engine.query("soil").chunks


def test_an_index_build_on_a_full_disk_keeps_the_live_version_and_the_store(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ingest([corpus])
    (corpus / "docs" / "birds.md").write_text(BIRDS)
    with monkeypatch.context() as patch:
        patch.setattr(FaissVectorIndex, "save", _enospc)
        with pytest.raises(
            DiskFullError, match="the store is intact and the live index version is unchanged"
        ):
            engine.ingest([corpus])
    assert IndexVersions(engine.settings.indices_dir).current() == 1
    assert engine.store.counts()["documents"] == 3  # the new file was committed before the build
    stats = engine.stats()  # which the served version does not have yet, and says so
    assert stats.documents == 2 and stats.index_behind_store
    report = engine.ingest([corpus])  # space again: the same command finishes the work
    assert report.build is not None and report.build.version == 2
    assert [p.name for p in engine.settings.indices_dir.iterdir() if p.name.startswith(".staging")] == []


def test_the_cli_says_disk_full_in_one_line_exit_2(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(corpus)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(os, "replace", _enospc)  # e.g. the index pointer's swap
    (corpus / "docs" / "birds.md").write_text(BIRDS)
    assert main(["--data-dir", str(data), "ingest", "--quiet", str(corpus)]) == 2  # no progress lines
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no space left on the disk mounted at" in err and "unexpected" not in err


FAISS_FULL = (
    "Error in void faiss::write_index(const Index*, IOWriter*, int) at "
    "/project/faiss/impl/index_write.cpp:499: "
    "Error: 'ret == (size * 4)' failed: write error in /data/indices/.staging/dense.faiss: 4051 != 32000 "
    "(No space left on device)"
)  # what faiss raises on a full disk (as written to /dev/full)


def test_faiss_writing_its_index_on_a_full_disk_is_the_disk_full_line(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # it was "unexpected RuntimeError ... faiss::write_index", exit 70, after the store's commit
    import faiss

    def _full(*_args: object) -> None:
        raise RuntimeError(FAISS_FULL)

    assert is_disk_full(RuntimeError(FAISS_FULL))
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(corpus)]) == 0
    capsys.readouterr()
    (corpus / "docs" / "birds.md").write_text(BIRDS)
    with monkeypatch.context() as patch:
        patch.setattr(faiss, "write_index", _full)
        assert main(["--data-dir", str(data), "ingest", "--quiet", str(corpus)]) == 2  # no progress lines
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no space left on the disk mounted at" in err and "unexpected" not in err
    assert "the store is intact and the live index version is unchanged" in err
    assert main(["--data-dir", str(data), "ingest", str(corpus)]) == 0  # space again: it finishes
    engine = Engine.open(data)
    try:
        assert engine.stats().documents == 3 and not engine.index_behind_store()
    finally:
        engine.close()
