"""MaxP window index: equals a numpy brute force of 'best window per chunk'."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.multivector import MAX_WINDOWS, WindowedVectorIndex, cap_windows


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _corpus(rng: np.random.Generator, n: int = 300, d: int = 16) -> tuple[np.ndarray, list[np.ndarray]]:
    ids = rng.choice(10_000, size=n, replace=False).astype(np.int64)
    windows = [_unit(rng.standard_normal((int(rng.integers(1, 5)), d))) for _ in range(n)]
    return ids, windows


def _brute(ids, windows, q, k, allowed=None):
    best = {int(c): float((w @ q).max()) for c, w in zip(ids, windows, strict=True)}
    if allowed is not None:
        best = {c: s for c, s in best.items() if c in set(allowed.tolist())}
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


@pytest.mark.parametrize("seed", range(5))
def test_search_equals_brute_force_best_window(seed):
    rng = np.random.default_rng(seed)
    ids, windows = _corpus(rng)
    index = WindowedVectorIndex.create(16, "m")
    index.add(ids, windows)
    assert len(index) == len(ids) and index.window_count == sum(len(w) for w in windows)
    for k in (1, 7, 50, 400):
        q = _unit(rng.standard_normal((1, 16)))[0]
        got = index.search(q, k)
        want = _brute(ids, windows, q, k)
        assert [h.id for h in got] == [c for c, _ in want]
        np.testing.assert_allclose([h.score for h in got], [s for _, s in want], atol=1e-5)


def test_allowed_ids_still_give_k_chunks_and_removal_forgets_all_windows():
    rng = np.random.default_rng(7)
    ids, windows = _corpus(rng)
    index = WindowedVectorIndex.create(16, "m")
    index.add(ids, windows)
    allowed = ids[:15]
    q = _unit(rng.standard_normal((1, 16)))[0]
    hits = index.search(q, 10, allowed)
    assert len(hits) == 10 and {h.id for h in hits} <= set(allowed.tolist())
    assert [h.id for h in hits] == [c for c, _ in _brute(ids, windows, q, 10, allowed)]
    assert index.remove(ids[:100]) == 100
    assert index.window_count == sum(len(w) for w in windows[100:])
    assert not {h.id for h in index.search(q, 500)} & set(ids[:100].tolist())
    assert index.search(q, 10, np.array([], dtype=np.int64)) == []


def test_pooled_vectors_save_and_load(tmp_path):
    rng = np.random.default_rng(3)
    ids, windows = _corpus(rng, n=20)
    index = WindowedVectorIndex.create(16, "m")
    index.add(ids, windows)
    pooled = index.vectors(ids[:3])
    for row, w in zip(pooled, windows[:3], strict=True):
        mean = w.mean(axis=0)
        np.testing.assert_allclose(row, mean / np.linalg.norm(mean), rtol=1e-5)
    index.save(tmp_path)
    again = WindowedVectorIndex.load(tmp_path, model_name="m", dimension=16)
    q = _unit(rng.standard_normal((1, 16)))[0]
    assert again.search(q, 5) == index.search(q, 5)
    (tmp_path / "windows.json").write_text("{")
    with pytest.raises(CorruptIndexError, match="windows.json"):
        WindowedVectorIndex.load(tmp_path, model_name="m", dimension=16)


def test_duplicate_ids_are_refused_and_long_window_lists_are_capped():
    index = WindowedVectorIndex.create(4, "m")
    index.add(np.array([1]), [np.eye(4, dtype=np.float32)[:2]])
    with pytest.raises(ValueError, match="already"):
        index.add(np.array([1]), [np.eye(4, dtype=np.float32)[:1]])
    many = _unit(np.random.default_rng(0).standard_normal((MAX_WINDOWS + 7, 4)))
    capped = cap_windows(many)
    assert capped.shape == (MAX_WINDOWS, 4)
    np.testing.assert_allclose(capped[: MAX_WINDOWS - 1], many[: MAX_WINDOWS - 1])
