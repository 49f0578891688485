"""Approximate dense search: Faiss ``IndexHNSWFlat`` or ``IndexIVFFlat`` beside the exact index.

``AnnVectorIndex`` keeps every vector in the exact index (``FaissVectorIndex``, Faiss
``IndexIDMap2(IndexFlatIP)``): ids, membership, stored vectors, ``score`` and the exact fallback
all come from it, so everything but the top-k search is exact and unchanged. The approximate
structure answers ``search``. The cost is memory: the vectors are held twice.

Conventions, beyond those of ``indices/dense.py``:

* ``hnsw``: ``efSearch`` is ``index.hnsw_ef_search`` (at least the k asked for). A removal is a
  tombstone (searches exclude it through an ``IDSelectorNot``); the graph is rebuilt from the exact
  index when tombstones pass ``REBUILD_DEAD_SHARE`` of it.
* ``ivf``: trained on the first vectors added (``index.ivf_nlist`` lists, 0: 4·√n, at most n/39;
  k-means on a seeded sample of 64 points a list, 10 iterations),
  ``index.ivf_nprobe`` lists probed; removals are in place. Lists are not retrained as the index
  grows: ``hybrid-rag rebuild`` does that.
* **Filters.** A filter (``allowed_ids``) that leaves at most ``index.ann_exact_filter_max``
  vectors is searched exactly over those vectors: an approximate search with a selective filter
  finds few allowed vectors in the part of the graph or the lists it visits, so it returns fewer
  than k or the wrong ones. A wider filter goes to Faiss as an ``IDSelectorBatch`` in
  ``SearchParametersHNSW`` / ``SearchParametersIVF``; should that return fewer than k while k
  allowed vectors exist, the search is redone exactly. k results come back whenever k exist.
* On disk beside ``dense.faiss`` and ``dense.json``: ``ann.faiss``, ``ann.json`` (kind, build
  parameters, count, sha256) and ``ann-dead.npy`` (the HNSW tombstones).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.dense import FaissVectorIndex, _as_ids, _one_openmp_thread, rank_hits
from hybrid_rag.indices.files import file_sha256, write_json_atomic
from hybrid_rag.types import Hit

ANN_FILE = "ann.faiss"
ANN_MANIFEST = "ann.json"
DEAD_FILE = "ann-dead.npy"
REBUILD_DEAD_SHARE = 0.2
TRAIN_POINTS_PER_LIST = 64  # k-means sample: 64 points a list (Faiss's floor is 39), seeded
TRAIN_ITERATIONS = 10  # k-means iterations (Faiss's default 25 costs minutes at a million vectors)
KINDS = ("hnsw", "ivf")


@dataclass(frozen=True)
class AnnParams:
    """What an approximate index is built and searched with (``IndexSettings``' ANN keys)."""

    kind: str = "hnsw"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 128
    ivf_nlist: int = 0
    ivf_nprobe: int = 32
    exact_filter_max: int = 20_000

    def build_params(self) -> dict[str, Any]:
        """The parameters fixed at build time (recorded in the manifest)."""
        keys = ("hnsw_m", "hnsw_ef_construction") if self.kind == "hnsw" else ("ivf_nlist",)
        return {"kind": self.kind, **{k: getattr(self, k) for k in keys}}


def ivf_lists(n: int, wanted: int = 0) -> int:
    """Inverted lists for ``n`` training vectors: ``wanted`` or 4·√n, at most n/39 (Faiss wants
    39 training points a centroid), at least 1."""
    lists = wanted or int(4 * np.sqrt(n))
    return int(max(1, min(lists, n // 39)))


class AnnVectorIndex:
    """The ``VectorIndex`` protocol: exact storage and scores, approximate top-k search."""

    def __init__(self, dimension: int, model_name: str, params: AnnParams) -> None:
        if params.kind not in KINDS:
            raise ValueError(f"ANN kind must be one of {', '.join(KINDS)}, got {params.kind!r}")
        self.flat = FaissVectorIndex(dimension, model_name)
        self.params = params
        self._ann: Any = None  # made by the first add (IVF trains on it)
        self._dead = np.empty(0, dtype=np.int64)  # HNSW tombstones, sorted
        self.built_params: dict[str, Any] = params.build_params()

    @property
    def dimension(self) -> int:
        return self.flat.dimension

    @property
    def model_name(self) -> str:
        return self.flat.model_name

    @property
    def kind(self) -> str:
        return self.params.kind

    def __len__(self) -> int:
        return len(self.flat)

    def ids(self) -> np.ndarray:
        return self.flat.ids()

    def contains(self, ids: np.ndarray) -> np.ndarray:
        return self.flat.contains(ids)

    def vector(self, chunk_id: int) -> np.ndarray:
        return self.flat.vector(chunk_id)

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        return self.flat.vectors(ids)

    def score(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        return self.flat.score(query, ids)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        ids = _as_ids(ids)
        self.flat.add(ids, vectors)  # validates shapes, values and duplicates
        if len(ids) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self._ann is None:
            self._ann = self._new_ann(vectors)
        if self.kind == "hnsw" and len(self._dead) and np.isin(ids, self._dead).any():
            self._rebuild()  # a tombstoned id came back: the graph must not hold it twice
            return
        self._ann.add_with_ids(vectors, ids)

    def _new_ann(self, sample: np.ndarray) -> Any:
        d = self.dimension
        if self.kind == "hnsw":
            hnsw = faiss.IndexHNSWFlat(d, self.params.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = self.params.hnsw_ef_construction
            return faiss.IndexIDMap(hnsw)
        lists = ivf_lists(len(sample), self.params.ivf_nlist)
        quantizer = faiss.IndexFlatIP(d)
        ivf = faiss.IndexIVFFlat(quantizer, d, lists, faiss.METRIC_INNER_PRODUCT)
        ivf.cp.niter = TRAIN_ITERATIONS
        train = sample
        if len(sample) > TRAIN_POINTS_PER_LIST * lists:
            pick = np.random.default_rng(0).choice(len(sample), TRAIN_POINTS_PER_LIST * lists, replace=False)
            train = sample[np.sort(pick)]
        ivf.train(train)
        self.built_params = {**self.params.build_params(), "ivf_nlist": lists}
        return ivf

    def remove(self, ids: np.ndarray) -> int:
        ids = np.unique(_as_ids(ids))
        held = ids[self.flat.contains(ids)] if len(ids) else ids
        removed = self.flat.remove(held)
        if removed and self._ann is not None:
            if self.kind == "ivf":
                self._ann.remove_ids(faiss.IDSelectorBatch(held))
            else:
                self._dead = np.union1d(self._dead, held)
                if len(self._dead) > REBUILD_DEAD_SHARE * self._ann.ntotal:
                    self._rebuild()
        return removed

    def _rebuild(self) -> None:
        """The HNSW graph anew from the exact index's vectors (drops every tombstone)."""
        ids = self.flat.ids()
        self._dead = np.empty(0, dtype=np.int64)
        self._ann = self._new_ann(np.empty((0, self.dimension), dtype=np.float32))
        if len(ids):
            self._ann.add_with_ids(self.flat.vectors(ids), ids)

    def search(self, query: np.ndarray, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]:
        """Top-k by inner product, approximately; see the module docstring for filters."""
        query = np.asarray(query, dtype=np.float32)
        q = query.reshape(1, -1) if query.size else query
        if (
            query.size == 0
            or k <= 0
            or len(self) == 0
            or self._ann is None
            or q.shape[1] != self.dimension
            or not np.isfinite(q).all()
            or not q.any()
        ):
            return self.flat.search(query, k, allowed_ids)  # its answer or its error, as exact search
        if allowed_ids is not None:
            allowed = np.unique(_as_ids(allowed_ids))
            allowed = allowed[self.flat.contains(allowed)] if len(allowed) else allowed
            if len(allowed) == 0:
                return []
            if len(allowed) <= self.params.exact_filter_max:
                return rank_hits(allowed, (self.flat.vectors(allowed) @ q[0]).astype(np.float64), k)
            want = min(k, len(allowed))
            hits = self._ann_search(q, want, len(allowed), faiss.IDSelectorBatch(allowed))
            return hits if len(hits) >= want else self.flat.search(query, k, allowed)
        want = min(k, len(self))
        selector = faiss.IDSelectorNot(faiss.IDSelectorBatch(self._dead)) if len(self._dead) else None
        hits = self._ann_search(q, want, len(self), selector)
        return hits if len(hits) >= want else self.flat.search(query, k)

    def _ann_search(self, query: np.ndarray, k: int, limit: int, selector: Any) -> list[Hit]:
        """Faiss searches of the approximate index for k + 1, widened while the k-th and the last
        score tie (ties break by id, as in exact search); ``selector`` is kept alive by the caller."""
        fetch = min(k + 1, limit)
        while True:
            if self.kind == "hnsw":
                params = faiss.SearchParametersHNSW(efSearch=max(self.params.hnsw_ef_search, fetch))  # type: ignore[attr-defined]
            else:
                params = faiss.SearchParametersIVF(nprobe=min(self.params.ivf_nprobe, self._ann.nlist))  # type: ignore[call-arg]
            if selector is not None:
                params.sel = selector
            with _one_openmp_thread():
                scores, ids = self._ann.search(np.ascontiguousarray(query), fetch, params=params)
            found = ids[0] != -1
            scores, ids = scores[0][found].astype(np.float64), ids[0][found]
            if fetch >= limit or len(ids) < fetch or scores[-1] < scores[k - 1]:
                return rank_hits(ids, scores, k)
            fetch = min(fetch * 2, limit)

    def save(self, directory: Path) -> None:
        directory = Path(directory)
        self.flat.save(directory)
        np.save(directory / DEAD_FILE, self._dead, allow_pickle=False)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{ANN_FILE}.", suffix=".tmp")
        os.close(fd)
        try:
            ann = self._ann if self._ann is not None else self._new_ann(self._empty_sample())
            faiss.write_index(ann, tmp)
            digest = file_sha256(Path(tmp))
            os.replace(tmp, directory / ANN_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        manifest = {"kind": self.kind, "build": self.built_params, "count": len(self), "sha256": digest}
        write_json_atomic(directory / ANN_MANIFEST, manifest)

    def _empty_sample(self) -> np.ndarray:
        return np.eye(1, self.dimension, dtype=np.float32)  # an empty IVF still needs one trained list

    @classmethod
    def load(cls, directory: Path, *, model_name: str, dimension: int, params: AnnParams) -> AnnVectorIndex:
        """Read an index saved by :meth:`save`; its kind and build parameters are the saved ones,
        the search parameters (efSearch, nprobe, the filter bound) those of ``params``."""
        directory = Path(directory)
        manifest = _read_manifest(directory / ANN_MANIFEST)
        path = directory / ANN_FILE
        if not path.is_file() or file_sha256(path) != manifest["sha256"]:
            raise CorruptIndexError(f"approximate index file missing or failing its checksum: {path}")
        saved = {**asdict(params), **manifest["build"], "kind": manifest["kind"]}
        index = cls(dimension, model_name, AnnParams(**saved))
        index.flat = FaissVectorIndex.load(directory, model_name=model_name, dimension=dimension)
        try:
            index._ann = faiss.read_index(str(path))
            index._dead = np.load(directory / DEAD_FILE, allow_pickle=False).astype(np.int64)
        except (RuntimeError, OSError, ValueError) as exc:
            raise CorruptIndexError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
        index.built_params = manifest["build"]
        held = index._ann.ntotal - len(index._dead) if len(index.flat) else 0
        if manifest["count"] != len(index.flat) or held != len(index.flat):
            raise CorruptIndexError(
                f"{path} does not match the exact index beside it: run `hybrid-rag rebuild`"
            )
        return index


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise CorruptIndexError(f"approximate index manifest missing or unreadable: {path}") from None
    if not isinstance(manifest, dict) or any(k not in manifest for k in ("kind", "build", "count", "sha256")):
        raise CorruptIndexError(f"approximate index manifest incomplete: {path}")
    if manifest["kind"] not in KINDS:
        raise CorruptIndexError(f"approximate index manifest {path} names kind {manifest['kind']!r}")
    return manifest


@dataclass(frozen=True)
class AnnBackend:
    """What ``WindowedVectorIndex`` and ``live.new_dense`` take as a backend: call it for an
    empty index, ``load`` one from a folder."""

    params: AnnParams

    def __call__(self, dimension: int, model_name: str) -> AnnVectorIndex:
        return AnnVectorIndex(dimension, model_name, self.params)

    def load(self, directory: Path, *, model_name: str, dimension: int) -> AnnVectorIndex:
        return AnnVectorIndex.load(directory, model_name=model_name, dimension=dimension, params=self.params)
