"""Index versions on Milvus (milvus-lite): a build writes a new collection pair and moves the alias,
queries follow the alias, rollback moves it back, old versions are dropped, an ingest updates the
newest version in place, a build killed half-way leaves the old alias live, filters are pushed down.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_settings import FAKE, child_env

pytest.importorskip("pymilvus", reason="the [milvus] extra (pymilvus, milvus-lite) is not installed")

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import NoIndexError
from hybrid_rag.filters import parse_filter
from hybrid_rag.indices.milvus.client import forget_clients
from hybrid_rag.settings import Settings

pytestmark = pytest.mark.integration
# snapshot_versions off: these tests pin the in-place update of the newest version (the snapshot
# default is pinned by test_rollback_serves_the_old_text.py)
MILVUS = {
    "index.dense_backend": "milvus",
    "bm25.backend": "milvus",
    "milvus.index_type": "FLAT",
    "milvus.snapshot_versions": False,
}


@pytest.fixture
def milvus_settings(settings: Settings) -> Settings:
    return settings.with_overrides({**MILVUS, "paths.keep_versions": 3})


@pytest.fixture
def milvus_engine(milvus_settings: Settings) -> Engine:
    engine = Engine(milvus_settings)
    yield engine
    engine.close()
    forget_clients()


def _collections(engine: Engine) -> list[str]:
    versions = engine.ingestor.builder.versions
    return sorted(n for n in versions.client.list_collections() if n.startswith(versions.prefix))


def test_builds_move_the_alias_and_rollback_moves_it_back(milvus_engine: Engine, corpus: Path) -> None:
    engine = milvus_engine
    assert engine.ingest([corpus]).build.version == 1
    assert engine.query("circle area").index_version == 1
    assert engine.rebuild().version == 2
    assert engine.indices.get().version == 2 and engine.query("circle area").index_version == 2
    assert engine.stats().live_version == 2
    engine.rollback(1)
    assert engine.query("circle area").index_version == 1
    with pytest.raises(NoIndexError, match="not on disk"):
        engine.rollback(7)
    engine.rollback(2)
    assert [engine.rebuild().version for _ in range(2)] == [3, 4]  # keep_versions 3: version 1 is dropped
    assert engine.ingestor.builder.versions.versions() == [2, 3, 4]
    names = [f"hybrid_rag_v{v:06d}{part}" for v in (2, 3, 4) for part in ("", "_dense")]
    assert _collections(engine) == names


def test_an_ingest_updates_the_newest_version_in_place(milvus_engine: Engine, corpus: Path) -> None:
    engine = milvus_engine
    engine.ingest([corpus])
    (corpus / "docs" / "roses.md").write_text("# Roses\n\nRoses need pruning in early spring.\n")
    report = engine.ingest([corpus]).build
    assert (report.version, report.incremental, report.added) == (1, True, 1)
    hits = engine.query("roses pruning", top_k=1).chunks
    assert hits[0].chunk.path.endswith("roses.md")
    (corpus / "src" / "geometry.py").unlink()
    report = engine.ingest([corpus]).build
    assert report.incremental and report.removed >= 1
    live = engine.indices.get()
    assert set(live.dense.ids().tolist()) == set(engine.store.all_chunk_ids().tolist())
    assert not engine.ingestor.builder.is_stale()


def test_after_a_rollback_an_ingest_builds_a_new_version(milvus_engine: Engine, corpus: Path) -> None:
    engine = milvus_engine
    engine.ingest([corpus])
    engine.rebuild()
    engine.rollback(1)
    (corpus / "docs" / "roses.md").write_text("# Roses\n\nRoses need pruning in early spring.\n")
    report = engine.ingest([corpus]).build
    assert (report.version, report.incremental) == (3, False)
    assert engine.ingestor.builder.versions.manifest(1)["chunks"] == 2  # the rolled-back-to one as it was


@pytest.mark.parametrize("ids_at_most", [4096, 0])  # 0: every filter goes as its compiled expression
def test_filters_are_pushed_down_and_still_give_k(
    milvus_engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch, ids_at_most: int
) -> None:
    from hybrid_rag.indices.milvus import collection as milvus_collection

    engine = milvus_engine
    notes = corpus.parent / "notes"
    notes.mkdir()
    for i in range(6):
        (notes / f"note_{i}.md").write_text(f"# Note {i}\n\nSoil and compost note number {i}.\n")
    engine.ingest([corpus])
    engine.ingest([notes], metadata={"team": "garden", "rank": 3})
    monkeypatch.setattr(milvus_collection, "ID_LIST_MAX", ids_at_most)
    for text in (
        "source_type = text and path ~ 'notes/**'",
        "path ~ 'note_*.md'",
        "meta.team = garden and meta.rank >= 3",
        "not meta.team in (search) and meta.rank = 3",
    ):
        allowed = set(engine.store.chunk_ids_matching(parse_filter(text)).tolist())
        assert len(allowed) >= 6, text
        for mode in ("dense", "bm25", "hybrid"):
            result = engine.query("circle area radius soil", top_k=5, filters=text, mode=mode)
            assert {c.chunk.id for c in result.chunks} <= allowed, (text, mode)
            assert len(result.chunks) == 5 or mode == "bm25", (text, mode)  # BM25: only chunks with a term


DRIVER = textwrap.dedent(
    """\
    import os, signal, sys
    from hybrid_rag.engine import Engine
    from hybrid_rag.indices.milvus import dense as milvus
    from fake_settings import fake_settings

    add = milvus.MilvusVectorIndex.add

    def add_then_die(self, *args, **kwargs):
        add(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)  # dense rows written, the BM25 ones not yet

    milvus.MilvusVectorIndex.add = add_then_die
    settings = fake_settings(sys.argv[1], {**MILVUS})
    if len(sys.argv) > 2:
        Engine(settings).ingest([sys.argv[2]])  # an update in place of the live version
    else:
        Engine(settings).rebuild()
    """
).replace("**MILVUS", repr(MILVUS)[1:-1])


def _run_killed_driver(*args: str) -> None:
    """Run DRIVER with ``args`` in a child process, which must end killed by SIGKILL."""
    env = child_env()
    done = subprocess.run([sys.executable, "-c", DRIVER, *args], env=env, capture_output=True, timeout=300)
    assert done.returncode == -9, done.stderr.decode()[-2000:]


def test_a_build_killed_half_way_leaves_the_old_alias_live(milvus_settings: Settings, corpus: Path) -> None:
    engine = Engine(milvus_settings)
    engine.ingest([corpus])
    before = [c.chunk.id for c in engine.query("circle area").chunks]
    engine.close()
    forget_clients()  # milvus-lite serves one process a file: let the driver open it
    _run_killed_driver(str(milvus_settings.data_dir))
    engine = Engine(milvus_settings)
    try:
        versions = engine.ingestor.builder.versions
        assert versions.current() == 1 and versions.versions() == [1]
        assert "hybrid_rag_v000002" in _collections(engine)  # the dead build's, not complete
        assert [c.chunk.id for c in engine.query("circle area").chunks] == before
        assert engine.rebuild().version == 3
        assert "hybrid_rag_v000002" not in _collections(engine)  # dropped: its process is gone
    finally:
        engine.close()
        forget_clients()


def test_an_update_killed_half_way_is_finished_by_the_next_ingest(
    milvus_settings: Settings, corpus: Path
) -> None:
    engine = Engine(milvus_settings)
    engine.ingest([corpus])
    engine.close()
    forget_clients()
    (corpus / "docs" / "roses.md").write_text("# Roses\n\nRoses need pruning in early spring.\n")
    (corpus / "src" / "geometry.py").unlink()
    _run_killed_driver(str(milvus_settings.data_dir), str(corpus))
    engine = Engine(milvus_settings)
    try:
        builder = engine.ingestor.builder
        assert builder.versions.current() == 1 and builder.is_stale()  # the store went ahead
        assert engine.query("circle area").chunks  # the live version still answers
        report = engine.ingest([corpus]).build
        assert report is not None and (report.version, report.incremental) == (1, True)
        live, stored = engine.indices.get(), set(engine.store.all_chunk_ids().tolist())
        assert set(live.dense.ids().tolist()) == set(live.bm25.ids().tolist()) == stored
        assert not builder.is_stale()
        assert engine.query("roses pruning", top_k=1, mode="bm25").chunks[0].chunk.path.endswith("roses.md")
    finally:
        engine.close()
        forget_clients()


def test_an_unreachable_server_is_one_line_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    for key, value in {**MILVUS, **FAKE, "milvus.uri": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv("HYBRID_RAG_" + key.upper().replace(".", "__"), value)
    assert main(["--data-dir", str(tmp_path), "versions"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "cannot reach Milvus at http://127.0.0.1:9 (milvus.uri)" in err


TOPICS = {
    "soil": "Compost improves drainage in heavy clay soil and keeps moisture in sandy soil.",
    "roses": "Roses need pruning in early spring and a sunny, sheltered spot.",
    "tomato": "Tomatoes need full sun, regular watering and side shoots pinched out.",
    "bees": "Bees visit lavender and borage; a pollinator strip helps the orchard.",
    "pond": "A small pond draws frogs that eat slugs in the vegetable beds.",
}


def test_every_stage_ranks_the_same_on_milvus_as_on_faiss_and_bm25s(
    settings: Settings, tmp_path: Path
) -> None:
    """Same chunks, same vectors (FLAT is exact), same terms: the fused, reranked, diversified results
    and the context are the local default's."""
    root = tmp_path / "garden"
    root.mkdir()
    for i, (name, text) in enumerate(TOPICS.items()):
        for j in range(3):
            (root / f"{name}_{j}.md").write_text(f"# {name.title()} {j}\n\n{text} Note {i * 3 + j}.\n")
            (root / f"{name}_{j}.py").write_text(f'def {name}_{j}():\n    """{text}"""\n    return {j}\n')
    features = {"expansion": True, "rerank": True, "mmr": True, "parent_context": True}
    base = settings.with_overrides(
        {"rerank.backend": "lexical", **{f"features.{k}": v for k, v in features.items()}}
    )
    results = []
    for overrides in ({}, MILVUS):
        engine = Engine(base.with_overrides(overrides))
        try:
            engine.ingest([root])
            asked = [
                engine.query(q, top_k=6, filters=f)
                for q in ("clay soil drainage", "pruning roses spring", "slugs frogs pond")
                for f in (None, "source_type = code", "path ~ '*.md'")
            ]
            context, checked = engine.context("which plants do bees visit?", max_tokens=400)
            kept = [c.chunk.id for c in checked.result.chunks] if checked else None
            results.append(([[c.chunk.id for c in r.chunks] for r in asked], context.render(), kept))
        finally:
            engine.close()
            forget_clients()
    assert results[0][0] == results[1][0] and all(results[0][0])
    assert results[0][1:] == results[1][1:]
