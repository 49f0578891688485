"""Hub chunks (``indices/hubness.py``): each chunk's mean cosine to its k nearest chunks is measured
when a version is built, kept beside the Faiss index, updated (not redone) by a small build, and
``features.hubness`` ranks the dense stage by CSLS (``2 cos - r``); a version without the table
ranks as before and says so."""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices import hubness
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.hubness import HubCorrected, Radii, measure


def unit_rows(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def flat(ids: np.ndarray, rows: np.ndarray) -> FaissVectorIndex:
    index = FaissVectorIndex(rows.shape[1], "m")
    index.add(ids, rows)
    return index


def brute_radius(rows: np.ndarray, k: int) -> np.ndarray:
    sims = rows @ rows.T
    np.fill_diagonal(sims, -np.inf)
    return np.sort(sims, axis=1)[:, ::-1][:, :k].mean(axis=1)


def test_a_chunk_s_radius_is_its_mean_cosine_to_its_k_nearest_other_chunks():
    rows = unit_rows(40)
    ids = np.arange(100, 140, dtype=np.int64)
    table = measure(flat(ids, rows), k=5)
    assert table.ids.tolist() == ids.tolist()
    assert np.allclose(table.radius, brute_radius(rows, 5), atol=1e-5)
    assert all(i not in row for i, row in zip(table.ids, table.neighbours, strict=True))  # never itself


def test_a_small_change_updates_the_table_to_what_a_full_measure_gives():
    rows = unit_rows(60, seed=1)
    ids = np.arange(60, dtype=np.int64)
    before = measure(flat(ids[:55], rows[:55]), k=4)
    after_index = flat(ids[:55], rows[:55])
    after_index.remove(np.array([3, 17, 40]))  # neighbours of some kept chunks are gone
    after_index.add(ids[55:], rows[55:])
    updated = measure(after_index, k=4, previous=before)
    full = measure(after_index, k=4)
    assert updated.ids.tolist() == full.ids.tolist()
    assert np.array_equal(updated.neighbours, full.neighbours)
    assert np.allclose(updated.cosines, full.cosines, atol=1e-6)


def test_the_correction_demotes_a_hub_below_a_chunk_it_barely_beat():
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    rows = np.array([[0.9, 0.436, 0], [0.88, 0, 0.475], [0, 1, 0]], dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    index = flat(np.array([1, 2, 3]), rows)
    assert [h.id for h in index.search(query, 2)] == [1, 2]  # cosine: the hub first
    radii = Radii(np.array([1, 2, 3]), np.array([0.6, 0.1, 0.3], dtype=np.float32))  # 1 is a hub
    corrected = HubCorrected(index, radii)
    hits = corrected.search(query, 2)
    assert [h.id for h in hits] == [2, 1]
    by_id = sorted(hits, key=lambda h: h.id)
    assert np.allclose(corrected.score(query, np.array([1, 2])), [h.score for h in by_id])
    assert len(corrected) == 3 and corrected.dimension == 3  # everything else is the index's


CODE = {
    f"src/mod{i}.py": f'def handler_{i}(value):\n    """Handle {word} requests for the {word} service."""\n'
    f"    return value * {i}\n"
    for i, word in enumerate(["billing", "shipping", "login", "search", "upload", "report"])
}
# a hub: close to every handler (their words together), so it tops their questions by cosine
CODE["src/all.py"] = (
    "def dispatch(value):\n"
    '    """Handle billing shipping login search upload report requests for the service."""\n'
    "    return value\n"
)


@pytest.fixture
def engine(tmp_path):
    with engine_over(write_tree(tmp_path / "repo", CODE)) as eng:
        yield eng


def live_folder(engine):
    versions = engine.indices.versions
    return versions.directory(versions.current()), versions.manifest(versions.current())


def test_a_build_writes_the_table_beside_the_faiss_index_and_names_it_in_its_manifest(engine):
    folder, manifest = live_folder(engine)
    assert (folder / hubness.FILE).is_file()
    assert manifest["hubness"]["k"] == 10 and manifest["hubness"]["chunks"] == manifest["dense_chunks"]
    table = hubness.load(folder, manifest)
    full = measure(engine.indices.get().dense, k=10)
    assert np.allclose(table.radius, full.radius, atol=1e-6)


# the dense list alone, as it ranks (no rule after it reorders)
DENSE_ONLY = dict.fromkeys(("expansion", "symbols", "path_roles", "path_match", "file_coherence"), False)


def test_the_flag_reorders_dense_per_call_and_off_is_the_cosine_ranking(engine):
    q = "which handler deals with shipping requests"
    plain = engine.query(q, mode="dense", top_k=6, features=DENSE_ONLY)
    off = engine.query(q, mode="dense", top_k=6, features={**DENSE_ONLY, "hubness": False})
    on = engine.query(q, mode="dense", top_k=6, features={**DENSE_ONLY, "hubness": True})
    assert [c.chunk.id for c in plain.chunks] == [c.chunk.id for c in off.chunks]
    live = engine.indices.get()
    vector = engine.embedder.embed_queries([q])[0]
    ids = np.array([c.chunk.id for c in on.chunks])
    expected = 2 * live.dense.score(vector, ids) - live.hubness.of(ids)
    assert np.all(np.diff(expected) <= 1e-9)  # on: ranked by 2cos - r
    assert not any("hubness" in n for n in on.trace.notes)


def test_a_version_without_a_table_ranks_by_cosine_and_says_so(engine):
    folder, manifest = live_folder(engine)
    del manifest["hubness"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / hubness.FILE).unlink()
    engine.indices._live = None  # reload the version as written
    q = "which handler deals with shipping requests"
    on = engine.query(q, mode="dense", top_k=6, features={**DENSE_ONLY, "hubness": True})
    off = engine.query(q, mode="dense", top_k=6, features=DENSE_ONLY)
    assert [c.chunk.id for c in on.chunks] == [c.chunk.id for c in off.chunks]
    assert any("no hubness table" in n for n in on.trace.notes)


def test_a_table_the_manifest_names_that_is_damaged_is_a_corrupt_index(engine):
    folder, manifest = live_folder(engine)
    (folder / hubness.FILE).write_bytes(b"not a table")
    with pytest.raises(CorruptIndexError, match="hubness table"):
        hubness.load(folder, manifest)
    (folder / hubness.FILE).unlink()
    with pytest.raises(CorruptIndexError, match="missing"):
        hubness.load(folder, manifest)


def test_no_table_past_the_cap(tmp_path):
    with engine_over(write_tree(tmp_path / "repo", CODE), index__hubness_max_chunks=2) as eng:
        folder, manifest = live_folder(eng)
        assert "hubness" not in manifest and not (folder / hubness.FILE).exists()


def test_the_flag_changes_the_order_where_cosine_and_csls_disagree(engine):
    live = engine.indices.get()
    ids = live.dense.ids()
    orders = set()
    for q in ("shipping requests", "login requests", "upload requests", "search requests", "billing"):
        vector = engine.embedder.embed_queries([q])[0]
        cos = live.dense.score(vector, ids)
        csls = 2 * cos - live.hubness.of(ids)
        if list(np.argsort(-cos, kind="stable")) != list(np.argsort(-csls, kind="stable")):
            on = engine.query(q, mode="dense", top_k=len(ids), features={**DENSE_ONLY, "hubness": True})
            off = engine.query(q, mode="dense", top_k=len(ids), features=DENSE_ONLY)
            orders.add(tuple(c.chunk.id for c in on.chunks) != tuple(c.chunk.id for c in off.chunks))
    assert orders == {True}


def test_an_ingest_that_adds_a_file_updates_the_table_as_a_full_measure_would(engine, tmp_path):
    extra = write_tree(tmp_path / "repo", {"src/extra.py": "def refund(order):\n    return order.total\n"})
    engine.ingest([extra])
    folder, manifest = live_folder(engine)
    table = hubness.load(folder, manifest)
    full = measure(engine.indices.get().dense, k=10)
    assert table.ids.tolist() == full.ids.tolist()
    assert np.allclose(table.radius, full.radius, atol=1e-6)
