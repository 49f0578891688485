"""Segmented BM25 after any sequence of adds, replacements and deletions scores exactly as a
from-scratch build of the live chunks: the same top k, the same float32 scores bit for bit, for
every variant, and the same as bm25s's own score matrix (format 1) over those chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_rag.indices.bm25 import BM25IndexManager, _BM25sBackend
from hybrid_rag.settings import BM25Settings

VARIANTS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
WORDS = [f"w{i}" for i in range(12)]
QUERIES = ["w0 w1", "w2 w2 w3", "w11", "w4 w5 w6 w7 w8 w9", "w10 w0 w10", "unknown w3"]

doc = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
step = st.one_of(
    st.tuples(st.just("add"), st.lists(doc, min_size=1, max_size=4)),
    st.tuples(st.just("replace"), st.integers(0, 10_000), doc),
    st.tuples(st.just("delete"), st.integers(0, 10_000)),
)


def _settings(variant: str, **extra: object) -> BM25Settings:
    return BM25Settings(variant=variant, tokenizer="regex", stopwords="none", **extra)


def _apply(manager: BM25IndexManager, live: dict[int, str], action: tuple, next_id: int) -> int:
    """One ingest's worth of change, to the index and to the reference dict; returns the next id."""
    remove: list[int] = []
    add: dict[int, str] = {}
    if action[0] == "add":
        for text in action[1]:
            add[next_id] = text
            next_id += 1
    elif live and action[0] == "replace":  # a changed file: its chunk gets a new id (never reused)
        old = sorted(live)[action[1] % len(live)]
        remove, add = [old], {next_id: action[2]}
        next_id += 1
    elif live and action[0] == "delete":
        remove = [sorted(live)[action[1] % len(live)]]
    for chunk_id in remove:
        del live[chunk_id]
    live.update(add)
    manager.update(np.array(remove, dtype=np.int64), np.array(list(add), dtype=np.int64), list(add.values()))
    return next_id


def _assert_same(manager: BM25IndexManager, live: dict[int, str], variant: str) -> None:
    fresh = BM25IndexManager(_settings(variant))
    ids = np.array(sorted(live), dtype=np.int64)
    fresh.build(ids, [live[i] for i in ids.tolist()])
    assert sorted(manager.ids().tolist()) == ids.tolist()
    assert len(manager) == len(fresh)
    probe = np.concatenate([ids, [10**9]])  # an id never indexed scores NaN in both
    for query in QUERIES:
        assert manager.search(query, 5) == fresh.search(query, 5)
        assert manager.search(query, 3, allowed_ids=ids[::2]) == fresh.search(query, 3, allowed_ids=ids[::2])
        np.testing.assert_array_equal(manager.score(query, probe), fresh.score(query, probe))
    docs = fresh.tokenizer.tokenize_many([live[i] for i in ids.tolist()])
    if any(docs):  # bm25s's own precomputed matrix over the live chunks: the same float32 scores
        matrix = _BM25sBackend.build(docs, _settings(variant))
        for query in QUERIES:
            terms = [t for t in fresh.tokenizer.tokenize(query) if t in matrix.vocab]
            if terms:
                expected, matched = matrix.scores(terms)
                got = manager.score(query, ids)
                np.testing.assert_array_equal(got, np.where(matched, expected, 0.0))


@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(doc, min_size=0, max_size=6), steps=st.lists(step, min_size=1, max_size=8))
def test_random_updates_equal_a_full_build(variant: str, first: list[str], steps: list[tuple]) -> None:
    manager = BM25IndexManager(_settings(variant, max_deltas=2, merge_fraction=0.5))
    live = dict(enumerate(first, start=1))
    manager.build(np.array(list(live), dtype=np.int64), list(live.values()))
    next_id = len(first) + 1
    for action in steps:
        next_id = _apply(manager, live, action, next_id)
        _assert_same(manager, live, variant)


def test_segments_survive_save_and_load_with_links(tmp_path: Path) -> None:
    manager = BM25IndexManager(_settings("lucene", max_deltas=8, merge_fraction=1.0))
    live = {i: f"w{i % 5} w{i % 3} w7" for i in range(1, 41)}
    manager.build(np.array(list(live)), list(live.values()))
    manager.save(tmp_path / "v1")
    loaded = BM25IndexManager.load(tmp_path / "v1", manager.settings)
    _apply(loaded, live, ("replace", 3, "w1 w1 w9"), 100)
    _apply(loaded, live, ("add", ["w9 w10"]), 101)
    loaded.save(tmp_path / "v2")
    base = next((tmp_path / "v1" / "bm25").glob("seg-*.npz"))
    assert (tmp_path / "v2" / "bm25" / base.name).stat().st_ino == base.stat().st_ino  # linked, not rewritten
    again = BM25IndexManager.load(tmp_path / "v2", manager.settings)
    assert len(again.segmented.segments) == 3 and sum(again.segmented.dead) == 1
    _assert_same(again, live, "lucene")


def test_merge_policy_folds_deltas_then_the_base() -> None:
    manager = BM25IndexManager(_settings("lucene", max_deltas=2, merge_fraction=0.5))
    manager.build(np.arange(1, 21), [f"w{i % 7} w{i % 4}" for i in range(20)])
    assert manager.update(np.array([], dtype=np.int64), np.array([21]), ["w1"]) is None
    assert manager.update(np.array([], dtype=np.int64), np.array([22]), ["w2"]) is None
    assert manager.update(np.array([], dtype=np.int64), np.array([23]), ["w3"]) == "deltas"
    assert len(manager.segmented.segments) == 2
    assert manager.update(np.arange(1, 12), np.array([24]), ["w4"]) == "base"  # 11 of 20 deleted
    assert len(manager.segmented.segments) == 1 and sum(manager.segmented.dead) == 0
    assert sorted(manager.ids().tolist()) == list(range(12, 25))


def test_update_is_refused_where_it_cannot_apply() -> None:
    manager = BM25IndexManager(_settings("lucene", bm25_min_df=2))
    manager.build(np.arange(1, 4), ["w1 w2", "w1", "w2"])
    assert not manager.supports_update
    with pytest.raises(ValueError, match="cannot be updated in place"):
        manager.update(np.array([1]), np.array([9]), ["w1"])
    ranked = BM25IndexManager(BM25Settings(backend="rank_bm25", variant="robertson", tokenizer="regex"))
    ranked.build(np.arange(1, 3), ["w1", "w2"])
    assert not ranked.supports_update
    with pytest.raises(ValueError, match="already indexed"):
        fresh = BM25IndexManager(_settings("lucene"))
        fresh.build(np.arange(1, 3), ["w1", "w2"])
        fresh.update(np.array([], dtype=np.int64), np.array([2]), ["w3"])
