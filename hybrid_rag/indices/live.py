"""The live index: load a version from disk and serve it with hot reload (``indices/build.py``
writes the versions)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from hybrid_rag.errors import CorruptIndexError, IndexMismatchError, NoIndexError
from hybrid_rag.indices import hubness, question_bank
from hybrid_rag.indices.ann import AnnBackend, AnnParams, AnnVectorIndex
from hybrid_rag.indices.bm25 import BM25IndexManager
from hybrid_rag.indices.built import IndexConfig, LiveIndex
from hybrid_rag.indices.coverage import DENSE_CHUNKS
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.multivector import WindowedVectorIndex
from hybrid_rag.indices.second_dense import load_second
from hybrid_rag.indices.versions import IndexVersions
from hybrid_rag.protocols import DimensionLearner, Embedder
from hybrid_rag.settings import IndexSettings
from hybrid_rag.types import fields_of


def dense_kind(index: IndexSettings, chunks: int) -> str:
    """The Faiss index a build of ``chunks`` chunks writes: ``index.dense_kind``, with ``auto``
    exact (flat) below ``index.ann_min_chunks`` and IVF from there (it removes in place, so an
    update stays cheap). Other backends: "flat" (Chroma and Milvus choose their own)."""
    if index.dense_backend != "faiss":
        return "flat"
    if index.dense_kind == "auto":
        return "flat" if chunks < index.ann_min_chunks else "ivf"
    return index.dense_kind


def ann_params(index: IndexSettings, kind: str) -> AnnParams:
    tuning = fields_of(index, "hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "ivf_nlist", "ivf_nprobe")
    return AnnParams(kind=kind, exact_filter_max=index.ann_exact_filter_max, **tuning)


def _backend(index: IndexSettings, kind: str = "flat") -> type | AnnBackend:
    """The vector store behind the dense index: Faiss (exact or approximate) or Chroma (HNSW)."""
    if index.dense_backend == "chroma":
        from hybrid_rag.indices.chroma import ChromaVectorIndex

        return ChromaVectorIndex
    if kind in ("hnsw", "ivf"):
        return AnnBackend(ann_params(index, kind))
    return FaissVectorIndex


def new_dense(
    index: IndexSettings, embedder: Embedder, kind: str = "flat"
) -> FaissVectorIndex | AnnVectorIndex | WindowedVectorIndex:
    backend = _backend(index, kind)
    if index.dense_scoring == "maxp":
        return WindowedVectorIndex.create(embedder.dimension, embedder.model_name, backend)  # type: ignore[arg-type]
    return backend(embedder.dimension, embedder.model_name)


def load_dense(
    index: IndexSettings, directory: Path, embedder: Embedder, kind: str = "flat"
) -> FaissVectorIndex | AnnVectorIndex | WindowedVectorIndex:
    """A version's dense index, as the ``kind`` its manifest records (a version keeps its kind)."""
    backend = _backend(index, kind)
    kwargs = {"model_name": embedder.model_name, "dimension": embedder.dimension}
    if index.dense_scoring == "maxp":
        return WindowedVectorIndex.load(directory, backend=backend, **kwargs)  # type: ignore[arg-type]
    return backend.load(directory, **kwargs)


def open_versions(config: IndexConfig) -> IndexVersions:
    """The versions of the configured backend: folders under ``config.directory``, or on Milvus
    collections behind an alias (``milvus.versions.MilvusVersions``, the same methods)."""
    if config.index.dense_backend == "milvus":
        from hybrid_rag.indices.milvus.versions import MilvusVersions

        return MilvusVersions(config)  # type: ignore[return-value]
    return IndexVersions(config.directory)


def load_version(versions: IndexVersions, version: int, config: IndexConfig, embedder: Embedder) -> LiveIndex:
    if config.index.dense_backend == "milvus":
        return versions.load(version, embedder)  # type: ignore[attr-defined]
    directory = versions.directory(version)
    manifest = versions.manifest(version)
    params = manifest.get("params", {})
    for key in ("dense_scoring", "dense_backend"):
        built, wanted = params.get(key), getattr(config.index, key)
        if built != wanted:
            raise IndexMismatchError(
                f"index version {version} at {directory} was built with index.{key} {built!r}; the config "
                f"says {wanted!r}: run `hybrid-rag rebuild`"
            )
    learns = isinstance(embedder, DimensionLearner)  # a remote embedder learns it without a request
    if learns and params.get("model") == embedder.model_name and params.get("dimension"):
        embedder.expect_dimension(int(params["dimension"]))
    try:
        dense = load_dense(config.index, directory, embedder, params.get("dense_kind", "flat"))
        bm25 = BM25IndexManager.load(directory, config.bm25)
        second = load_second(config.index, directory, manifest, load_dense)  # None: the version has none
        hub = hubness.radii_of(hubness.load(directory, manifest))  # None: the version has no table
        questions = question_bank.load(directory, manifest)  # None: the version has no bank
    except CorruptIndexError as exc:
        raise CorruptIndexError(
            f"{exc}: run `hybrid-rag rebuild` (the store is intact) or `hybrid-rag rollback` to an older one"
        ) from None
    dense_chunks = manifest.get(DENSE_CHUNKS, manifest.get("chunks"))  # fewer: a partial version
    if len(dense) != dense_chunks or len(bm25) != manifest.get("chunks"):
        raise IndexMismatchError(
            f"index version {version} at {directory} is inconsistent (manifest {manifest.get('chunks')} "
            f"chunks, dense {len(dense)}, bm25 {len(bm25)}): run `hybrid-rag rebuild`"
        )
    return LiveIndex(version, dense, bm25, manifest, second, hub, questions)


class LiveIndexProvider:
    """Hands out the live version; follows ``CURRENT`` so a rebuild is picked up without a restart.

    A query holds the LiveIndex it started with, so a swap never changes an answer mid-query.
    """

    def __init__(self, config: IndexConfig, embedder: Embedder) -> None:
        self.config = config
        self.embedder = embedder
        self.versions = open_versions(config)
        self._live: LiveIndex | None = None
        self._lock = threading.Lock()

    def get(self) -> LiveIndex:
        version = self.versions.current()
        if version is None:
            raise NoIndexError()
        live = self._live
        if live is not None and live.version == version:
            return live
        with self._lock:
            if self._live is None or self._live.version != version:
                self._live = load_version(self.versions, version, self.config, self.embedder)
            return self._live

    def loaded_versions(self) -> Sequence[int]:
        return [] if self._live is None else [self._live.version]
