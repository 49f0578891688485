"""Build index versions from the MetadataStore and swap them in atomically.

The store is the source of truth: chunk texts for BM25 and, through the embedding cache keyed
by (model, chunk sha256), the vectors for Faiss. A build never re-embeds text it has embedded
before, so a rebuild costs index construction only.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from hybrid_rag.code.roles import chunk_role
from hybrid_rag.errors import CorruptIndexError, IndexMismatchError, StoreError, disk_full, is_disk_full
from hybrid_rag.indices import hubness, question_bank
from hybrid_rag.indices.ann import AnnVectorIndex
from hybrid_rag.indices.bm25 import BM25IndexManager
from hybrid_rag.indices.built import BuildReport, IndexConfig, Progress, source_hash
from hybrid_rag.indices.chunk_terms import chunk_terms
from hybrid_rag.indices.coverage import (
    DENSE_CHUNKS,
    DENSE_PENDING,
    drop_partials,
    is_partial,
    pending_summary,
)
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.files import write_json_atomic
from hybrid_rag.indices.live import dense_kind, load_dense, new_dense, open_versions
from hybrid_rag.indices.multivector import WindowedVectorIndex, add_chunk_vectors
from hybrid_rag.indices.retention import STORE_STATE, check_unchanged, collect, reader_name
from hybrid_rag.indices.second_build import second_for_build
from hybrid_rag.indices.second_dense import check_second
from hybrid_rag.indices.versions import INDEX_NAME, MANIFEST
from hybrid_rag.lang.tokenize import analysis_language
from hybrid_rag.paths import ingested_root
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import ChunkingSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.embedding_cache import cached_windows_of, embed_missing
from hybrid_rag.types import Chunk


def sample_ids(ids: np.ndarray, sample: int = 5) -> np.ndarray:
    """The chunks a build is checked with: evenly spaced, deterministic."""
    return ids[np.linspace(0, len(ids) - 1, num=min(sample, len(ids)), dtype=int)] if len(ids) else ids


def validate_build(
    dense: FaissVectorIndex | WindowedVectorIndex,
    bm25: BM25IndexManager,
    ids: np.ndarray,
    picks: Sequence[Chunk],
    *,
    partial: bool = False,
) -> None:
    """Refuse a build whose counts differ from the store's chunk ``ids`` (a ``partial`` one's dense
    index may hold fewer), or whose sample queries (``picks``, the chunks of :func:`sample_ids`) find
    nothing.

    A dense search with a vector the index holds for a chunk must score that vector's
    self-similarity at the top (identical twins may tie it), and a BM25 search with the chunk's
    first words must return something.
    """
    problems = []
    if len(dense) > len(ids) or (len(dense) != len(ids) and not partial) or len(bm25) != len(ids):
        problems.append(f"store has {len(ids)} chunks, dense {len(dense)}, bm25 {len(bm25)}")
    for chunk in picks if not problems else []:
        if partial and not dense.contains(np.array([chunk.id]))[0]:
            vector = None  # not embedded yet: BM25 alone finds it
        elif isinstance(dense, WindowedVectorIndex):
            vector = dense.windows(chunk.id)[0]
        else:
            vector = dense.vectors(np.array([chunk.id]))[0]
        hits = dense.search(vector, 1) if vector is not None else [None]
        if not hits or (vector is not None and hits[0].score < float(vector @ vector) - 1e-4):
            problems.append(f"dense search with chunk {chunk.id}'s own vector does not find it")
        words = " ".join(chunk.text.split()[:12])
        lang = analysis_language(chunk)
        read_as = lang if bm25.tokenizer.languages else None  # read as indexed
        found = not bm25.tokenizer.tokenize(words, lang) or bm25.search(words, 5, lang=read_as)
        if not found:  # stop words alone find nothing, and need not
            problems.append(f"bm25 search with chunk {chunk.id}'s first words finds nothing")
    if len(np.setdiff1d(dense.ids(), ids)):
        problems.append("dense index holds ids that are not in the store")
    if problems:
        raise IndexMismatchError("index build failed validation: " + "; ".join(problems))


class StoreChunks:
    """The store's chunks as a build needs them: every id and hash at once (two columns), the rows
    with their text only for the chunks a build adds, so an update reads the few it indexes and a
    full build reads the table once."""

    FETCH_SHARE = 0.2  # more than this share of the chunks: one pass over the table instead

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self.state, self.hashes = store.state_hashes()
        self.ids = np.fromiter(sorted(self.hashes), dtype=np.int64, count=len(self.hashes))
        self._all: dict[int, Chunk] | None = None

    def get(self, ids: np.ndarray) -> list[Chunk]:
        """The chunks ``ids``, in that order (one gone since the ids were read is left out)."""
        wanted = [int(i) for i in ids]
        if self._all is None and len(wanted) <= self.FETCH_SHARE * len(self.ids):
            found = self.store.chunks(wanted)
            if len(found) == len(wanted):
                return [found[i] for i in wanted]
        if self._all is None:
            self._all = {c.id: c for c in self.store.iter_chunks()}
        return [self._all[i] for i in wanted if i in self._all]


def keep_out_roles(
    todo: Sequence[Chunk], root: str | None, never: frozenset[str]
) -> tuple[list[Chunk], list[Chunk]]:
    """``todo`` split into the chunks to embed and those whose role ``never`` keeps out."""
    kept, out = [], []
    for chunk in todo:
        (out if chunk_role(chunk.path, root) in never else kept).append(chunk)
    return kept, out


class IndexBuilder:
    """Writes a new index version from the store and swaps it in atomically."""

    def __init__(
        self,
        store: MetadataStore,
        embedder: Embedder,
        config: IndexConfig,
        *,
        chunking: ChunkingSettings,
        keep_versions: int,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.chunking = chunking  # recorded in the manifest: chunk ids depend on it
        self.keep_versions = keep_versions
        self.versions = open_versions(config)
        # roles no build embeds (``ingest.embed_never``, ``code/roles.py``): BM25-only for good
        self.embed_never: frozenset[str] = frozenset()
        # the second vector set's embedder by model name (``second_dense.py``; the engine sets it)
        self.second_embedder: Callable[[str], Embedder] | None = None

    def build(
        self,
        *,
        full: bool = False,
        reason: str = "ingest",
        progress: Progress | None = None,
        embed: bool = True,
        git: Mapping[str, Any] | None = None,
        second_model: str | None = None,
    ) -> BuildReport:
        """A new version from the store, validated, then live. A full disk is one DiskFullError: the
        store is as it was, the live version unchanged (the half-written staging folder is pruned).
        ``embed=False`` embeds nothing: a partial version whose dense index holds only the chunks
        with cached vectors (``coverage.py``; not on Milvus, which embeds what is missing). ``git``:
        where the ingested work tree stood (``ingest/git.py``), kept in the manifest (not on Milvus).
        ``second_model``: the second vector set's model (``second_dense.py``; ``"off"`` drops it), by
        default the live version's."""
        try:
            return self._build(
                full=full, reason=reason, progress=progress, embed=embed, git=git, second_model=second_model
            )
        except (OSError, RuntimeError) as exc:  # RuntimeError: faiss's write error
            if not is_disk_full(exc):
                raise
            kept = "the store is intact and the live index version is unchanged"
            raise disk_full(self.config.directory, kept) from None

    def _never_ids(self, held: np.ndarray) -> np.ndarray:
        """The ids in ``held`` whose file's role ``embed_never`` keeps out of the dense index."""
        paths = self.store.chunk_paths()
        root = ingested_root(*self.store.path_bounds())
        out = [i for i in held.tolist() if i in paths and chunk_role(paths[i], root) in self.embed_never]
        return np.array(out, dtype=np.int64)

    @property
    def builds_partial(self) -> bool:
        """Whether ``build(embed=False)`` publishes a partial version (Faiss and Chroma, not Milvus)."""
        return self.config.index.dense_backend != "milvus"

    def _build(
        self,
        *,
        full: bool,
        reason: str,
        progress: Progress | None,
        embed: bool,
        git: Mapping[str, Any] | None,
        second_model: str | None = None,
    ) -> BuildReport:
        if self.config.index.dense_backend == "milvus":
            from hybrid_rag.indices.milvus.versions import build_milvus

            return build_milvus(self, full=full, reason=reason, progress=progress)
        seconds: dict[str, float] = {}
        start = time.perf_counter()
        store = StoreChunks(self.store)
        ids = store.ids
        seconds["read_store"] = time.perf_counter() - start

        t = time.perf_counter()
        kind = dense_kind(self.config.index, len(ids))
        previous = None if full else self._previous_dense(kind)
        if previous is not None:
            dense = previous
            stale = np.setdiff1d(dense.ids(), ids)
            if self.embed_never:  # a role added to ``ingest.embed_never`` since: out of the dense index
                stale = np.union1d(stale, self._never_ids(dense.ids()))
            removed = dense.remove(stale) if stale.size else 0
            todo = store.get(np.setdiff1d(ids, dense.ids()))
        else:
            dense = new_dense(self.config.index, self.embedder, kind)
            removed, todo = 0, store.get(ids)
        corrupt: list[str] = []
        # the ingested root, read only where a role is asked (roles are read relative to it)
        root = ingested_root(*self.store.path_bounds()) if self.embed_never or not embed else None
        if self.embed_never:  # never embedded, never in the dense index: BM25 finds them
            todo, kept_out = keep_out_roles(todo, root, self.embed_never)
        else:
            kept_out = []
        all_todo = todo
        if embed:
            windows, embedded = embed_missing(
                self.store,
                self.embedder,
                {c.sha256: c.text for c in todo},
                progress=progress,
                keep=True,
                corrupt=corrupt,
            )
        else:  # a partial version: the chunks whose vectors are in
            windows, embedded = cached_windows_of(self.store, self.embedder, todo, corrupt), 0
            todo = [c for c in todo if c.sha256 in windows]
        add_chunk_vectors(dense, todo, windows)
        added = {c.id for c in todo}
        left = [c.path for c in all_todo if c.id not in added] + [c.path for c in kept_out]
        if left and root is None:  # vectors that could not be made (a corrupt cache entry)
            root = ingested_root(*self.store.path_bounds())
        pending = pending_summary(left, root, self.embed_never) if left else {}
        seconds["dense"] = time.perf_counter() - t
        carried = self._live() if previous is not None else None  # its hub table is updated
        hub, seconds["hubness"] = hubness.for_build(self.config.index, dense, self.versions, carried)
        bank, seconds["question_bank"], bank_embedded = self._question_bank(dense, store, embed)
        held = dense.ids()  # the second vector set holds the same chunks (second_dense.py)
        second = second_for_build(
            self, store.get, held, second_model, embed=embed, progress=progress, full=full
        )
        if second is not None:
            seconds["second_dense"] = second.seconds

        t = time.perf_counter()
        bm25, bm25_update = self._bm25(store, full=full)
        seconds["bm25"] = time.perf_counter() - t

        t = time.perf_counter()
        version = self.versions.next_version()
        staging = self.versions.staging(version)
        dense.save(staging)
        bm25.save(staging)
        second_manifest = second.save(staging) if second is not None else {}
        second_manifest |= hubness.save(hub, staging, seconds["hubness"]) if hub is not None else {}
        if bank is not None:
            second_manifest |= question_bank.save(bank, staging, seconds["question_bank"], bank_embedded)
        src_hash = source_hash(store.hashes)
        params = {
            "model": self.embedder.model_name,
            "dimension": self.embedder.dimension,
            "dense_scoring": self.config.index.dense_scoring,
            "dense_backend": self.config.index.dense_backend,
            "dense_kind": kind,
            **({"ann": _ann_build_params(dense)} if kind != "flat" else {}),
            "bm25": self.config.bm25.model_dump(),
            "chunking": self.chunking.model_dump(),
        }
        manifest = {
            "format_version": 1,
            "version": version,
            "built_at": datetime.now(timezone.utc).isoformat(),
            "reason": reason,
            "source_hash": src_hash,
            "chunks": len(ids),
            DENSE_CHUNKS: len(dense),
            **({DENSE_PENDING: pending} if len(dense) < len(ids) else {}),
            STORE_STATE: store.state,
            "params": params,
            **({"git": dict(git)} if git else {}),
            **second_manifest,
        }
        write_json_atomic(staging / MANIFEST, manifest)
        try:
            partial = not embed or bool(kept_out)
            validate_build(dense, bm25, ids, store.get(sample_ids(ids)), partial=partial)
            if second is not None and (problems := check_second(second, dense.ids(), partial=partial)):
                raise IndexMismatchError("index build failed validation: " + "; ".join(problems))
            check_unchanged(self.store, store.state)
        except (IndexMismatchError, StoreError):
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self.versions.publish(version, staging)
        self.store.record_index_version(INDEX_NAME, version, src_hash, params, "built")
        drop_partials(self.versions, version)
        self.versions.prune(self.keep_versions)
        collect(self.store, self.versions, reader_name(self.config.directory))
        seconds["write"] = time.perf_counter() - t
        return BuildReport(
            version,
            len(ids),
            len(todo),
            removed,
            embedded,
            seconds,
            previous is not None,
            bm25_update,
            repaired=len(corrupt),
        )

    def _bm25(self, store: StoreChunks, *, full: bool) -> tuple[BM25IndexManager, str]:
        """The live version's BM25 with a delta segment for the new chunks and tombstones for the
        gone ones (the merge policy may then fold segments), or, on ``full`` or when the live
        version cannot be updated (other settings, an older format, ``bm25_min_df``), a new build."""
        bm25 = None if full else self._previous_bm25()
        if bm25 is not None and bm25.supports_update:
            held = bm25.ids()
            new = store.get(np.setdiff1d(store.ids, held))
            merged = bm25.update(
                np.setdiff1d(held, store.ids),
                np.array([c.id for c in new], dtype=np.int64),
                [c.text for c in new],
                tokens=chunk_terms(self.store, bm25.tokenizer, new),
                langs=[analysis_language(c) for c in new],
            )
            return bm25, "delta" + (f"+merge {merged}" if merged else "")
        bm25 = BM25IndexManager(self.config.bm25)
        chunks = store.get(store.ids)
        ids = np.array([c.id for c in chunks], dtype=np.int64)
        bm25.build(
            ids,
            [c.text for c in chunks],
            tokens=chunk_terms(self.store, bm25.tokenizer, chunks),
            langs=[analysis_language(c) for c in chunks],
        )
        return bm25, "build"

    def _question_bank(
        self, dense: Any, store: StoreChunks, embed: bool
    ) -> tuple[question_bank.QuestionRadii | None, float, int]:
        """The radii against the corpus's question bank (``indices/question_bank.py``); none for a
        partial version (its questions would be embedded before its chunks)."""
        if not embed:
            return None, 0.0, 0

        def docs() -> list[tuple[str, int | None]]:
            return [(s.doc, s.chunk_id) for s in self.store.symbols(state=store.state) if s.doc]

        return question_bank.for_build(self.config.index, dense, self.store, self.embedder, docs, store.get)

    def _live(self) -> int | None:
        """The live version, or None when ``CURRENT`` is corrupt: the build then starts from
        scratch, and publishing it repairs the pointer."""
        try:
            return self.versions.current()
        except CorruptIndexError:
            return None

    def _previous_bm25(self) -> BM25IndexManager | None:
        version = self._live()
        if version is None:
            return None
        try:
            return BM25IndexManager.load(self.versions.directory(version), self.config.bm25)
        except (IndexMismatchError, CorruptIndexError):
            return None  # other settings, or a damaged version: this build starts from scratch

    def is_stale(self) -> bool:
        """True when the live version does not index exactly the store's chunks (e.g. after a
        crash between the store commit and the index swap, or after a rollback)."""
        version = self._live()
        if version is None:
            return self.store.chunk_count() > 0
        try:
            manifest = self.versions.manifest(version)
        except CorruptIndexError:
            return True
        return is_partial(manifest) or manifest.get("source_hash") != source_hash(self.store.chunk_hashes())

    def _previous_dense(self, kind: str) -> FaissVectorIndex | AnnVectorIndex | WindowedVectorIndex | None:
        """The live version's dense index, to update in place of a full build, if it is compatible
        (the same scoring, backend and kind: a store that grew past ``ann_min_chunks`` is rebuilt)."""
        version = self._live()
        if version is None:
            return None
        try:
            params = self.versions.manifest(version).get("params", {})
        except CorruptIndexError:
            return None
        if any(params.get(k) != getattr(self.config.index, k) for k in ("dense_scoring", "dense_backend")):
            return None
        if params.get("dense_kind", "flat") != kind:
            return None
        try:
            return load_dense(self.config.index, self.versions.directory(version), self.embedder, kind)
        except (IndexMismatchError, CorruptIndexError):
            return None  # another model, or a damaged version: this build starts from scratch


def _ann_build_params(dense: object) -> dict:
    """The approximate index's build parameters (the IVF list count as trained), for the manifest."""
    inner = dense.inner if isinstance(dense, WindowedVectorIndex) else dense
    return dict(getattr(inner, "built_params", {}))
