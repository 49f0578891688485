"""A version is a snapshot: after an edit or a delete, ``rollback`` serves exactly what that version
served (content, citations, metadata, quotes), on Faiss/bm25s and on Milvus, with the store on
SQLite and on PostgreSQL; the next ingest moves forward from the store's newest state; rows no
kept version reads are garbage-collected."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

pytestmark = pytest.mark.integration

OPS_V1 = "# Ops\n\nRestart the frobnicator with systemctl restart frob.\nCheck the logs in /var/log/frob.\n"
OPS_V2 = "# Ops\n\nNothing here about services any more.\nSee the wiki instead.\n"
MILVUS = {"index.dense_backend": "milvus", "bm25.backend": "milvus", "milvus.index_type": "FLAT"}


def _engine(settings: Settings, store_url: str | None, backend: str, keep: int = 5) -> Engine:
    overrides = {"store.url": store_url, "paths.keep_versions": keep, "features.expansion": False}
    return Engine(settings.with_overrides({**overrides, **(MILVUS if backend == "milvus" else {})}))


@pytest.fixture(params=["faiss", "milvus"])
def backend(request: pytest.FixtureRequest, store_url: str | None) -> str:
    if request.param == "milvus":
        pytest.importorskip("pymilvus", reason="the [milvus] extra (pymilvus, milvus-lite) is not installed")
        if store_url is not None:
            pytest.skip("Milvus runs with the SQLite store here (the store is the same code on both)")
    return request.param


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ops.md").write_text(OPS_V1)
    (root / "garden.md").write_text("# Garden\n\nTomatoes need full sun and regular watering.\n")
    return root


def _top(engine: Engine, text: str) -> tuple[str, str, tuple[str, ...]]:
    result = engine.query(text, top_k=1, absolute_paths=True)  # stored paths, as the store keeps them
    assert not [n for n in result.trace.notes if "dropped" in n], result.trace.notes
    chunk = result.chunks[0].chunk
    return chunk.path, chunk.text, tuple(result.trace.notes)


def test_rollback_after_an_edit_serves_the_old_text_and_quotes(
    settings: Settings, store_url: str | None, backend: str, folder: Path
) -> None:
    engine = _engine(settings, store_url, backend)
    try:
        assert engine.ingest([folder], metadata={"team": "ops"}).build.version == 1
        before = engine.query("restart the frobnicator", top_k=1).chunks[0]
        context_before, _ = engine.context("restart the frobnicator", top_k=1)
        (folder / "ops.md").write_text(OPS_V2)
        assert engine.ingest([folder], metadata={"team": "wiki"}).build.version == 2
        assert "Restart" not in _top(engine, "restart the frobnicator")[1]
        engine.rollback(1)
        after = engine.query("restart the frobnicator", top_k=1).chunks[0]
        assert after.chunk == before.chunk  # id, text, lines, path, metadata: what v1 served
        assert after.chunk.meta["team"] == "ops" and "Restart the frobnicator" in after.chunk.text
        context_after, _ = engine.context("restart the frobnicator", top_k=1)
        assert context_after.render() == context_before.render()  # the quotes read v1's lines
        assert "Restart the frobnicator" in context_after.render()
        assert engine.stats().old_revisions["chunks"] >= 1
        report = engine.ingest([folder], metadata={"team": "wiki"})  # moves forward from the newest state
        assert report.build is not None and report.build.version == 3
        assert "Nothing here" in _top(engine, "services wiki")[1]
    finally:
        engine.close()


def test_rollback_after_a_delete_brings_the_file_back(
    settings: Settings, store_url: str | None, backend: str, folder: Path
) -> None:
    engine = _engine(settings, store_url, backend)
    try:
        engine.ingest([folder])
        garden = str((folder / "garden.md").resolve())
        assert engine.delete([garden]).version == 2
        shown = engine.query("tomatoes sun watering", absolute_paths=True).chunks
        assert shown and all(c.chunk.path != garden for c in shown)
        engine.rollback(1)
        assert _top(engine, "tomatoes sun watering")[:2] == (
            garden,
            (folder / "garden.md").read_text().strip(),
        )
        assert engine.query("tomatoes", filters={"path": garden}).chunks  # filters reach the old rows
        assert garden in {d.path for d in engine.documents()}  # the version served lists it
        assert garden not in {d.path for d in engine.store.documents()}  # the store's present does not
    finally:
        engine.close()


def test_rows_no_kept_version_reads_are_garbage_collected(
    settings: Settings, store_url: str | None, folder: Path
) -> None:
    engine = _engine(settings, store_url, "faiss", keep=2)
    try:
        engine.ingest([folder])
        old_ids = set(engine.store.chunk_hashes())
        (folder / "ops.md").write_text(OPS_V2)
        engine.ingest([folder])  # v2; v1 still kept and reads the old ops.md
        assert engine.stats().old_revisions["chunks"] == 1
        assert set(engine.store.chunks(old_ids)) == old_ids
        engine.rebuild()  # v3: v1 pruned, the oldest kept (v2) was built after the edit
        stats = engine.stats()
        assert stats.old_revisions["chunks"] == 0 and stats.chunks == len(engine.store.chunk_hashes())
        assert len(engine.store.chunks(old_ids)) == len(old_ids) - 1
    finally:
        engine.close()
