"""The ``VectorIndex`` contract: one suite that every dense index passes.

Each entry of ``FACTORIES`` makes an empty index and reopens a saved one; every test runs once per
entry. The contract (``protocols.VectorIndex``, ``indices/dense.py``'s conventions):

* search equals a numpy brute force (MaxP for a windowed index: a chunk scores as its best window),
  best first, **ties by ascending id**, k hits whenever k exist and never padding;
* add / remove / ids / contains / score agree with each other and with search;
* ``allowed_ids`` is a prefilter: k hits whenever k allowed ids are held, unknown ids ignored;
* degenerate cases give ``[]``: ``k <= 0``, an empty index, an empty or all-zero query, an empty
  allowed set; a stored zero vector scores 0;
* bad input is refused with the same messages (duplicates, ids already held, NaN, dimension);
* save / load round-trips (an empty index too) and refuses another model or dimension.

To add a backend, append a ``VectorFactory`` (an approximate index passes the contract on these
small sets; its recall on large ones is a backend-specific test beside it). Backend-specific
behaviour (file formats, checksums, HNSW recall, Chroma's working folder, Milvus expressions) stays
in ``tests/unit/test_<backend>*.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hybrid_rag.errors import IndexMismatchError
from hybrid_rag.protocols import VectorIndex
from hybrid_rag.types import Hit

DIM = 24
MODEL = "test-model"
NO_MILVUS = pytest.mark.skipif(
    find_spec("pymilvus") is None, reason="the [milvus] extra (pymilvus, milvus-lite) is not installed"
)


@dataclass(frozen=True)
class VectorFactory:
    """How the contract makes, fills and reopens one kind of dense index.

    ``make(dimension, model_name, workdir)`` returns an empty index; ``load(directory, model_name,
    dimension, workdir)`` reopens what ``index.save(directory)`` wrote. ``windowed``: ``add`` takes
    one window matrix a chunk and the index ranks by the best window (MaxP); otherwise one row a
    chunk (an (n, d) array).
    """

    name: str
    make: Callable[[int, str, Path], Any]
    load: Callable[[Path, str, int, Path], Any]
    windowed: bool = False
    marks: tuple[pytest.MarkDecorator, ...] = ()


def _faiss(dimension: int, model: str, _: Path) -> Any:
    from hybrid_rag.indices.dense import FaissVectorIndex

    return FaissVectorIndex(dimension, model)


def _faiss_load(directory: Path, model: str, dimension: int, _: Path) -> Any:
    from hybrid_rag.indices.dense import FaissVectorIndex

    return FaissVectorIndex.load(directory, model_name=model, dimension=dimension)


def _maxp(dimension: int, model: str, _: Path) -> Any:
    from hybrid_rag.indices.multivector import WindowedVectorIndex

    return WindowedVectorIndex.create(dimension, model)


def _maxp_load(directory: Path, model: str, dimension: int, _: Path) -> Any:
    from hybrid_rag.indices.multivector import WindowedVectorIndex

    return WindowedVectorIndex.load(directory, model_name=model, dimension=dimension)


def _ann(kind: str, windowed: bool = False) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """HNSW / IVF (``indices/ann.py``), every filter through Faiss (``exact_filter_max`` 0)."""
    from hybrid_rag.indices.ann import AnnBackend, AnnParams

    backend = AnnBackend(AnnParams(kind=kind, exact_filter_max=0))

    def make(dimension: int, model: str, _: Path) -> Any:
        from hybrid_rag.indices.multivector import WindowedVectorIndex

        if windowed:
            return WindowedVectorIndex.create(dimension, model, backend)
        return backend(dimension, model)

    def load(directory: Path, model: str, dimension: int, _: Path) -> Any:
        from hybrid_rag.indices.multivector import WindowedVectorIndex

        if windowed:
            return WindowedVectorIndex.load(directory, model_name=model, dimension=dimension, backend=backend)
        return backend.load(directory, model_name=model, dimension=dimension)

    return make, load


def _chroma(dimension: int, model: str, _: Path) -> Any:
    from hybrid_rag.indices.chroma import ChromaVectorIndex

    return ChromaVectorIndex(dimension, model)


def _chroma_load(directory: Path, model: str, dimension: int, _: Path) -> Any:
    from hybrid_rag.indices.chroma import ChromaVectorIndex

    return ChromaVectorIndex.load(directory, model_name=model, dimension=dimension)


def _milvus_client(workdir: Path) -> Any:
    """One milvus-lite file for the whole session (a new collection per index)."""
    from hybrid_rag.indices.milvus.client import connect
    from hybrid_rag.settings import MilvusSettings

    return connect(MilvusSettings(uri="conformance.db"), workdir)


def _milvus(scoring: str) -> Callable[[int, str, Path], Any]:
    def make(dimension: int, model: str, workdir: Path) -> Any:
        from hybrid_rag.indices.milvus.dense import MilvusVectorIndex
        from hybrid_rag.settings import MilvusSettings

        settings = MilvusSettings(index_type="FLAT")
        name = "c_" + uuid.uuid4().hex[:12]
        client = _milvus_client(workdir)
        return MilvusVectorIndex.create(
            client, name, settings, dimension=dimension, model_name=model, scoring=scoring
        )

    return make


def _milvus_load(directory: Path, model: str, dimension: int, workdir: Path) -> Any:
    from hybrid_rag.indices.milvus.dense import MilvusVectorIndex
    from hybrid_rag.settings import MilvusSettings

    client = _milvus_client(workdir)
    settings = MilvusSettings(index_type="FLAT")
    return MilvusVectorIndex.load(directory, client, settings, model_name=model, dimension=dimension)


FACTORIES: list[VectorFactory] = [
    VectorFactory("faiss-flat", _faiss, _faiss_load),
    VectorFactory("maxp-faiss", _maxp, _maxp_load, windowed=True),
    VectorFactory("faiss-hnsw", *_ann("hnsw")),
    VectorFactory("faiss-ivf", *_ann("ivf")),
    VectorFactory("maxp-faiss-hnsw", *_ann("hnsw", windowed=True), windowed=True),
    VectorFactory("chroma", _chroma, _chroma_load),
    VectorFactory("milvus-maxp", _milvus("maxp"), _milvus_load, windowed=True, marks=(NO_MILVUS,)),
    VectorFactory("milvus-pooled", _milvus("pooled"), _milvus_load, marks=(NO_MILVUS,)),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("vector-contract")
    if find_spec("pymilvus") is not None:
        from hybrid_rag.indices.milvus.client import forget_clients

        forget_clients()  # release the milvus-lite file


@pytest.fixture(params=[pytest.param(f, id=f.name, marks=f.marks) for f in FACTORIES])
def factory(request: pytest.FixtureRequest) -> VectorFactory:
    return request.param


@dataclass(frozen=True)
class Data:
    """Chunks under sparse, large ids, each with its window matrix, and queries."""

    ids: np.ndarray
    mats: list[np.ndarray]
    queries: np.ndarray

    def best(self, q: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Each chunk's best window score (MaxP; one window: the plain inner product)."""
        picked = range(len(self.ids)) if rows is None else rows
        return np.array([float((self.mats[i] @ q).max()) for i in picked])

    def truth(self, q: np.ndarray, k: int, rows: np.ndarray | None = None) -> tuple[list[int], np.ndarray]:
        """The brute-force top k: (ids, scores), ties by ascending id."""
        rows = np.arange(len(self.ids)) if rows is None else np.asarray(rows)
        scores = self.best(q, rows)
        order = np.lexsort((self.ids[rows], -scores))[:k]
        return self.ids[rows][order].tolist(), scores[order]


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _data(factory: VectorFactory, n: int = 300, seed: int = 7) -> Data:
    """``n`` chunks: 1-4 windows each for a windowed index, one row each otherwise."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10**9, size=n, replace=False)).astype(np.int64) + 2**40
    sizes = rng.integers(1, 5, size=n) if factory.windowed else np.ones(n, dtype=int)
    return Data(ids, [_unit(rng, int(s)) for s in sizes], _unit(rng, 12))


def add(factory: VectorFactory, index: Any, ids: np.ndarray, mats: Sequence[np.ndarray]) -> None:
    """Add chunks in the form the index takes: window matrices, or one (n, d) array of rows."""
    if factory.windowed:
        index.add(np.asarray(ids, dtype=np.int64), list(mats))
    else:
        rows = np.vstack(mats) if len(mats) else np.empty((0, DIM), dtype=np.float32)
        index.add(np.asarray(ids, dtype=np.int64), rows)


@pytest.fixture
def data(factory: VectorFactory) -> Data:
    return _data(factory)


@pytest.fixture
def filled(factory: VectorFactory, data: Data, workdir: Path) -> Any:
    """The 300 chunks, added in two calls."""
    index = factory.make(DIM, MODEL, workdir)
    add(factory, index, data.ids[:200], data.mats[:200])
    add(factory, index, data.ids[200:], data.mats[200:])
    return index


def _ids(hits: list[Hit]) -> list[int]:
    return [h.id for h in hits]


# ------------------------------------------------------------------------------------ the contract


def test_implements_the_protocol(filled: Any) -> None:
    assert isinstance(filled, VectorIndex)
    assert filled.dimension == DIM and len(filled) == 300
    ids = filled.ids()
    assert ids.dtype == np.int64 and len(ids) == 300


def test_search_equals_a_numpy_brute_force(filled: Any, data: Data) -> None:
    for q in data.queries:
        want_ids, want_scores = data.truth(q, 10)
        hits = filled.search(q, 10)
        assert _ids(hits) == want_ids
        np.testing.assert_allclose([h.score for h in hits], want_scores, rtol=1e-5, atol=1e-6)
        assert all(isinstance(h, Hit) and type(h.id) is int and type(h.score) is float for h in hits)


def test_search_after_removals_equals_a_brute_force(factory: VectorFactory, filled: Any, data: Data) -> None:
    gone = np.random.default_rng(1).choice(data.ids, size=100, replace=False)
    assert filled.remove(np.concatenate([gone, gone[:10], np.array([1, 2, 3])])) == 100
    assert filled.remove(gone) == 0
    keep = np.flatnonzero(~np.isin(data.ids, gone))
    assert len(filled) == 200 and np.array_equal(np.sort(filled.ids()), data.ids[keep])
    for q in data.queries:
        assert _ids(filled.search(q, 15)) == data.truth(q, 15, keep)[0]


def test_allowed_ids_are_a_prefilter_that_still_gives_k(filled: Any, data: Data) -> None:
    rows = np.sort(np.random.default_rng(2).choice(len(data.ids), size=15, replace=False))
    for q in data.queries:
        want_ids, want_scores = data.truth(q, 10, rows)
        hits = filled.search(q, 10, allowed_ids=data.ids[rows])
        assert _ids(hits) == want_ids and len(hits) == 10
        np.testing.assert_allclose([h.score for h in hits], want_scores, rtol=1e-5, atol=1e-6)


def test_allowed_ids_fewer_than_k_and_unknown_ids(filled: Any, data: Data) -> None:
    rows = np.array([5, 50, 250])
    allowed = np.concatenate([data.ids[rows], [-7, 123]])  # two ids the index does not hold
    q = data.queries[0]
    assert _ids(filled.search(q, 10, allowed_ids=allowed)) == data.truth(q, 10, rows)[0]
    assert filled.search(q, 10, allowed_ids=np.array([-7, 123])) == []


def test_k_larger_than_the_index_gives_everything_without_padding(
    factory: VectorFactory, data: Data, workdir: Path
) -> None:
    index = factory.make(DIM, MODEL, workdir)
    add(factory, index, data.ids[:7], data.mats[:7])
    q = data.queries[0]
    assert _ids(index.search(q, 100)) == data.truth(q, 100, np.arange(7))[0]


def test_degenerate_cases_give_empty_results(
    factory: VectorFactory, filled: Any, data: Data, workdir: Path
) -> None:
    q = data.queries[0]
    assert filled.search(q, 0) == [] and filled.search(q, -3) == []
    assert filled.search(np.empty(0, dtype=np.float32), 5) == []
    assert filled.search(np.zeros(DIM, dtype=np.float32), 5) == []
    assert filled.search(q, 5, allowed_ids=np.empty(0, dtype=np.int64)) == []
    empty = factory.make(DIM, MODEL, workdir)
    assert len(empty) == 0 and empty.ids().tolist() == [] and empty.search(q, 5) == []
    assert empty.contains(data.ids[:3]).tolist() == [False] * 3 and empty.remove(data.ids[:3]) == 0
    assert np.isnan(empty.score(q, data.ids[:2])).all()


def test_a_stored_zero_vector_scores_zero(factory: VectorFactory, workdir: Path) -> None:
    index = factory.make(DIM, MODEL, workdir)
    x = np.zeros((3, DIM), dtype=np.float32)
    x[0, 0], x[2, 0] = 1.0, -1.0  # id 20 is the zero vector
    add(factory, index, np.array([10, 20, 30]), [row[None, :] for row in x])
    q = np.eye(1, DIM, dtype=np.float32)[0]
    hits = index.search(q, 3)
    assert [(h.id, h.score) for h in hits] == [(10, 1.0), (20, 0.0), (30, -1.0)]
    assert index.score(q, np.array([20])).tolist() == [0.0]


def test_ties_break_by_ascending_id(factory: VectorFactory, workdir: Path) -> None:
    rng = np.random.default_rng(3)
    x = _unit(rng, 100)
    x[::3] = x[0]  # 34 identical rows: the best match for a query equal to them
    ids = rng.permutation(np.arange(1000, 1100)).astype(np.int64)
    index = factory.make(DIM, MODEL, workdir)
    add(factory, index, ids, [row[None, :] for row in x])
    tied = np.sort(ids[::3])
    assert _ids(index.search(x[0], 5)) == tied[:5].tolist()
    assert _ids(index.search(x[0], 40))[:34] == tied.tolist()
    allowed = ids[::3][::2]
    assert _ids(index.search(x[0], 4, allowed_ids=allowed)) == np.sort(allowed)[:4].tolist()


def test_bad_input_is_refused(factory: VectorFactory, filled: Any, data: Data, workdir: Path) -> None:
    with pytest.raises(ValueError, match="already in the index"):
        add(factory, filled, data.ids[3:5], data.mats[3:5])
    index = factory.make(DIM, MODEL, workdir)
    one = [m[:1] for m in data.mats[:3]]
    with pytest.raises(ValueError, match="duplicate ids"):
        add(factory, index, np.array([1, 2, 1]), one)
    with pytest.raises(ValueError, match="shape"):
        add(factory, index, np.array([1]), [one[0][:, :10]])
    with pytest.raises(ValueError, match="ids for"):
        add(factory, index, np.array([1, 2]), one)
    with pytest.raises(ValueError, match="NaN"):
        add(factory, index, np.array([1]), [np.full((1, DIM), np.nan, dtype=np.float32)])
    with pytest.raises(ValueError, match="dimension"):
        filled.search(np.ones(DIM + 1, dtype=np.float32), 3)
    add(factory, index, np.empty(0, dtype=np.int64), [])
    assert len(index) == 0


def test_ids_contains_and_score_follow_adds_and_removals(
    factory: VectorFactory, data: Data, workdir: Path
) -> None:
    index = factory.make(DIM, MODEL, workdir)
    add(factory, index, data.ids[:30], data.mats[:30])
    probe = np.array([data.ids[5], 7, data.ids[20], data.ids[5]], dtype=np.int64)
    assert index.contains(probe).tolist() == [True, False, True, True]
    assert index.remove(data.ids[[5]]) == 1
    assert index.contains(probe).tolist() == [False, False, True, False]
    add(factory, index, np.array([7]), data.mats[40:41])
    assert index.contains(probe).tolist() == [False, True, True, False]
    assert np.array_equal(np.sort(index.ids()), np.sort(np.concatenate([np.delete(data.ids[:30], 5), [7]])))
    q = data.queries[1]
    hits = index.search(q, 8)
    asked = np.array([*_ids(hits)[::-1], data.ids[5], 424242], dtype=np.int64)
    scores = index.score(q, asked)
    np.testing.assert_allclose(scores[:-2], [h.score for h in hits][::-1], rtol=1e-5, atol=1e-6)
    assert np.isnan(scores[-2:]).all()  # removed; never held


def test_save_and_load_round_trip(
    factory: VectorFactory, filled: Any, data: Data, tmp_path: Path, workdir: Path
) -> None:
    target = tmp_path / "new" / "dir"
    filled.save(target)
    loaded = factory.load(target, MODEL, DIM, workdir)
    assert len(loaded) == 300 and np.array_equal(np.sort(loaded.ids()), np.sort(filled.ids()))
    allowed = data.ids[::20]
    for q in data.queries[:5]:
        assert loaded.search(q, 10) == filled.search(q, 10)
        assert loaded.search(q, 10, allowed) == filled.search(q, 10, allowed)


def test_an_empty_index_round_trips(factory: VectorFactory, tmp_path: Path, workdir: Path) -> None:
    factory.make(DIM, MODEL, workdir).save(tmp_path)
    loaded = factory.load(tmp_path, MODEL, DIM, workdir)
    assert len(loaded) == 0 and loaded.search(np.ones(DIM, dtype=np.float32), 3) == []


@pytest.mark.parametrize(("model", "dim"), [("other-model", DIM), (MODEL, 2 * DIM)])
def test_load_refuses_another_model_or_dimension(
    factory: VectorFactory, filled: Any, tmp_path: Path, workdir: Path, model: str, dim: int
) -> None:
    filled.save(tmp_path)
    with pytest.raises(IndexMismatchError, match=rf"{MODEL} \(dim {DIM}\).*`hybrid-rag rebuild`"):
        factory.load(tmp_path, model, dim, workdir)
