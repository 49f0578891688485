"""Index versions built by the engine: an ingest adds a BM25 delta instead of rebuilding, a merge
keeps older versions intact for rollback, and a dense index keeps the kind it was written with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.indices.ann import AnnVectorIndex

QUERIES = ["tomatoes sun watering", "compost soil clay", "circle area radius", "configuration file"]


def _engine(tmp_path: Path, **overrides: object) -> Engine:
    return Engine(fake_settings(tmp_path / "data", {"paths.keep_versions": 10, **overrides}))


def _bm25_results(engine: Engine) -> list[list[tuple[int, float]]]:
    bm25 = engine.indices.get().bm25
    return [[(h.id, h.score) for h in bm25.search(q, 10)] for q in QUERIES]


def test_ingest_adds_deltas_and_rollback_crosses_a_merge(corpus: Path, tmp_path: Path) -> None:
    for i in range(30):  # a base big enough that a few changes stay below merge_fraction of it
        (corpus / "docs" / f"filler{i}.md").write_text(f"# Filler {i}\n\nSeeds, pots and trays number {i}.\n")
    engine = _engine(tmp_path, **{"bm25.max_deltas": 1, "bm25.merge_fraction": 0.5})
    try:
        first = engine.ingest([corpus])
        assert first.build.bm25_update == "build"
        seen = {first.build.version: _bm25_results(engine)}
        updates = []
        for i in range(3):
            with (corpus / "docs" / "garden.md").open("a") as handle:
                handle.write(f"\nCompost round {i}: soil, tomatoes and clay again.\n")
            (corpus / "docs" / f"note{i}.md").write_text(f"# Note {i}\n\nWatering tomatoes in round {i}.\n")
            report = engine.ingest([corpus])
            updates.append(report.build.bm25_update)
            seen[report.build.version] = _bm25_results(engine)
        assert updates == ["delta", "delta+merge deltas", "delta+merge deltas"]
        assert len(engine.indices.get().bm25.segmented.segments) == 2  # the base and one merged delta

        engine.rollback(first.build.version)
        assert _bm25_results(engine) == seen[first.build.version]  # its files untouched by the merges
        caught_up = engine.ingest([corpus])  # the store is ahead of v1: the next build catches up
        assert caught_up.build.bm25_update.startswith("delta")
        after_catch_up = _bm25_results(engine)
        assert after_catch_up == seen[max(seen)]
        engine.rebuild()
        assert len(engine.indices.get().bm25.segmented.segments) == 1
        assert _bm25_results(engine) == after_catch_up  # a full build scores the same, bit for bit
    finally:
        engine.close()


def test_a_version_keeps_the_dense_kind_it_was_written_with(corpus: Path, tmp_path: Path) -> None:
    engine = _engine(tmp_path, **{"index.dense_kind": "hnsw"})
    try:
        report = engine.ingest([corpus])
        live = engine.indices.get()
        assert live.manifest["params"]["dense_kind"] == "hnsw"
        assert live.manifest["params"]["ann"]["kind"] == "hnsw"
        assert isinstance(live.dense.inner, AnnVectorIndex) and live.dense.inner.kind == "hnsw"
        hits = engine.query("circle area radius", features={"expansion": False}).chunks
        assert hits
    finally:
        engine.close()
    flat = _engine(tmp_path, **{"index.dense_kind": "flat"})
    try:
        live = flat.indices.get()  # the version on disk is HNSW: it loads as HNSW
        assert live.version == report.build.version and isinstance(live.dense.inner, AnnVectorIndex)
        (corpus / "docs" / "more.md").write_text("# More\n\nA circle has an area.\n")
        flat.ingest([corpus])  # the configured kind differs: the dense index is built anew, exact
        assert flat.indices.get().manifest["params"]["dense_kind"] == "flat"
    finally:
        flat.close()


def test_auto_is_exact_below_ann_min_chunks_and_ivf_from_there(corpus: Path, tmp_path: Path) -> None:
    small = _engine(tmp_path / "a")
    try:
        small.ingest([corpus])
        assert small.indices.get().manifest["params"]["dense_kind"] == "flat"
    finally:
        small.close()
    big = _engine(tmp_path / "b", **{"index.ann_min_chunks": 1})
    try:
        big.ingest([corpus])
        live = big.indices.get()
        assert live.manifest["params"]["dense_kind"] == "ivf"
        ids = live.dense.ids()
        query = live.dense.vectors(ids[:1])[0]
        assert live.dense.search(query, 1)[0].id == ids[0]
        assert np.isfinite(live.dense.score(query, ids)).all()
    finally:
        big.close()
