"""Index versions on Milvus: one collection pair a version, the live one behind an alias.

Layout (``P`` is ``milvus.collection_prefix``)::

    P_v000003         BM25 over chunk terms; its property ``hybrid_rag_manifest`` is the version's
                      manifest (the same keys as a local ``manifest.json``, plus ``state``)
    P_v000003_dense   the dense windows (or pooled vectors)
    P                 the alias naming the live P_v...; every query process follows it

A full build writes a new pair in state ``building``, validates it, marks it ``complete`` and only
then moves the alias (``alter_alias`` is atomic), so a build killed at any moment leaves the old
version live; the next build drops the dead one (its pid no longer runs on this host). An ingest
writes a new version too (``milvus.snapshot_versions``, the default: each version stays the
snapshot a rollback serves, at the cost of rewriting every chunk from the embedding cache). With
``snapshot_versions: false`` an ingest while the live version is the newest one updates that pair
in place instead (deletes and upserts by chunk id; Milvus keeps BM25 statistics current), and
records the new source hash in its manifest; queries running meanwhile may see part of the update,
as with any live Milvus index. After a rollback the next ingest builds a new version, so the
version rolled back to stays as it was. ``prune`` drops complete versions beyond
``paths.keep_versions``, never the live one.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from hybrid_rag.errors import IndexMismatchError, NoIndexError
from hybrid_rag.indices.built import BuildInputs, BuildReport, IndexConfig, LiveIndex, source_hash
from hybrid_rag.indices.chunk_terms import chunk_terms
from hybrid_rag.indices.milvus.bm25 import MilvusKeywordIndex
from hybrid_rag.indices.milvus.client import chunk_fields, connect, milvus_errors
from hybrid_rag.indices.milvus.dense import MilvusVectorIndex
from hybrid_rag.indices.retention import STORE_STATE, check_unchanged, collect
from hybrid_rag.indices.versions import INDEX_NAME, LiveVersion, pid_alive
from hybrid_rag.lang.tokenize import analysis_language
from hybrid_rag.protocols import Embedder
from hybrid_rag.store.embedding_cache import embed_missing
from hybrid_rag.types import Chunk

MANIFEST = "hybrid_rag_manifest"  # the collection property holding a version's manifest (JSON)
BATCH = 1000  # chunks embedded and written at a time: a build holds one batch of vectors
BUILDING, COMPLETE = "building", "complete"


class MilvusVersions(LiveVersion):
    """The versions of one collection prefix. Cheap; talks to Milvus only when asked."""

    def __init__(self, config: IndexConfig) -> None:
        self.config = config
        self.prefix = config.milvus.collection_prefix
        self._pattern = re.compile(rf"^{re.escape(self.prefix)}_v(\d{{6,}})$")

    @property
    def client(self) -> Any:
        return connect(self.config.milvus, self.config.directory)

    def name(self, version: int) -> str:
        """The BM25 collection of ``version`` (the dense one is this name + ``_dense``)."""
        return f"{self.prefix}_v{version:06d}"

    def _all(self) -> dict[int, dict[str, Any]]:
        """Every version collection, built or building, with its manifest."""
        with milvus_errors("list collections"):
            names = self.client.list_collections()
        found = {int(m.group(1)): m.group(0) for m in map(self._pattern.match, names) if m}
        return {v: self._read(name) for v, name in sorted(found.items())}

    def _read(self, name: str) -> dict[str, Any]:
        """The manifest of collection ``name``; empty if it has none, or there is no such collection."""
        with milvus_errors(f"describe collection {name}"):
            if not self.client.has_collection(name):
                return {}
            properties = self.client.describe_collection(name).get("properties") or {}
        try:
            return json.loads(properties.get(MANIFEST) or "{}")
        except json.JSONDecodeError:
            return {}

    def _write(self, version: int, manifest: dict[str, Any]) -> None:
        text = json.dumps(manifest, sort_keys=True, default=str)
        with milvus_errors(f"write the manifest of {self.name(version)}"):
            self.client.alter_collection_properties(self.name(version), properties={MANIFEST: text})

    def current(self) -> int | None:
        """The live version (the alias's target), or None before the first build."""
        with milvus_errors(f"read alias {self.prefix}"):
            if self.prefix not in self.client.list_aliases().get("aliases", []):
                return None
            target = self.client.describe_alias(self.prefix)["collection_name"]
        match = self._pattern.match(target)
        return int(match.group(1)) if match else None

    def versions(self) -> list[int]:
        """Every complete version, oldest first."""
        return [v for v, m in self._all().items() if m.get("state") == COMPLETE]

    def next_version(self) -> int:
        return max([0, *self._all(), self.current() or 0]) + 1

    def manifest(self, version: int) -> dict[str, Any]:
        manifest = self._read(self.name(version))
        if not manifest:
            raise NoIndexError(f"index version {version} is not in Milvus (collection {self.name(version)})")
        return manifest

    def set_current(self, version: int) -> None:
        """Point the alias at a complete version (atomically)."""
        if self._read(self.name(version)).get("state") != COMPLETE:
            raise NoIndexError(f"index version {version} is not a complete collection in Milvus")
        with milvus_errors(f"move alias {self.prefix} to {self.name(version)}"):
            if self.current() is None:
                self.client.create_alias(self.name(version), self.prefix)
            else:
                self.client.alter_alias(self.name(version), self.prefix)

    def prune(self, keep: int) -> list[int]:
        """Drop all but the newest ``keep`` complete versions (never the live one) and the
        collections of builds whose process is gone."""
        live, found = self.current(), self._all()
        complete = [v for v, m in found.items() if m.get("state") == COMPLETE]
        old = [v for v in complete[: max(0, len(complete) - keep)] if v != live]
        dead = [v for v, m in found.items() if m.get("state") != COMPLETE and not _running(m)]
        with milvus_errors("drop old index versions"):
            for version in old + dead:
                for name in (self.name(version), self.name(version) + "_dense"):
                    if self.client.has_collection(name):
                        self.client.drop_collection(name)
        return sorted(old + dead)

    def open(self, version: int, embedder: Embedder) -> tuple[MilvusVectorIndex, MilvusKeywordIndex]:
        settings = self.config.milvus
        dense = MilvusVectorIndex.open(
            self.client,
            self.name(version) + "_dense",
            settings,
            model_name=embedder.model_name,
            dimension=embedder.dimension,
        )
        return dense, MilvusKeywordIndex.open(self.client, self.name(version), settings, self.config.bm25)

    def load(self, version: int, embedder: Embedder) -> LiveIndex:
        """The live index of ``version``; refused if built with another dense scoring."""
        manifest = self.manifest(version)
        built = manifest.get("params", {}).get("dense_scoring")
        if built != self.config.index.dense_scoring:
            raise IndexMismatchError(
                f"index version {version} in Milvus was built with index.dense_scoring {built!r}; the "
                f"config says {self.config.index.dense_scoring!r}: run `hybrid-rag rebuild`"
            )
        dense, keyword = self.open(version, embedder)
        return LiveIndex(version, dense, keyword, manifest)  # type: ignore[arg-type]


def _running(manifest: dict[str, Any]) -> bool:
    """Whether the build that wrote ``manifest`` may still be running (on another host: assume so
    for a day)."""
    if manifest.get("host") != socket.gethostname():
        return time.time() - float(manifest.get("started", 0)) < 86_400
    return pid_alive(int(manifest.get("pid", 0)))


def build_milvus(
    builder: BuildInputs, *, full: bool, reason: str, progress: Callable[[int], None] | None
) -> BuildReport:
    """``BuildInputs.build`` on Milvus: an update in place of the live version when it is the newest
    and built with the same parameters, else a new version behind the alias."""
    versions: MilvusVersions = builder.versions  # type: ignore[assignment]
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    state = builder.store.generation()
    chunks = list(builder.store.iter_chunks())
    check_unchanged(builder.store, state)  # the chunks read are that state's
    seconds["read_store"] = time.perf_counter() - start
    params = _params(builder)
    live = versions.current()
    newest = live is not None and live == max(versions.versions(), default=None)
    in_place = not full and not builder.config.milvus.snapshot_versions and newest
    if in_place and versions.manifest(live).get("params") == params:  # type: ignore[arg-type]
        return _update(builder, versions, live, chunks, state, params, reason, progress, seconds)  # type: ignore[arg-type]
    version = versions.next_version()
    manifest = {"state": BUILDING, "pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    settings, client = builder.config.milvus, versions.client
    dense = MilvusVectorIndex.create(
        client,
        versions.name(version) + "_dense",
        settings,
        dimension=builder.embedder.dimension,
        model_name=builder.embedder.model_name,
        scoring=builder.config.index.dense_scoring,
    )
    keyword = MilvusKeywordIndex.create(client, versions.name(version), settings, builder.config.bm25)
    versions._write(version, manifest)
    embedded = _write_chunks(builder, dense, keyword, chunks, seconds, progress)
    t = time.perf_counter()
    _validate(dense, keyword, chunks)
    check_unchanged(builder.store, state)
    versions._write(version, {**_manifest(version, chunks, state, params, reason), "state": COMPLETE})
    versions.set_current(version)
    builder.store.record_index_version(INDEX_NAME, version, source_hash(_hashes(chunks)), params, "built")
    versions.prune(builder.keep_versions)
    collect(builder.store, versions)
    seconds["write"] = time.perf_counter() - t
    return BuildReport(version, len(chunks), len(chunks), 0, embedded, seconds, False)


def _update(
    builder: BuildInputs,
    versions: MilvusVersions,
    version: int,
    chunks: Sequence[Chunk],
    state: int,
    params: dict[str, Any],
    reason: str,
    progress: Callable[[int], None] | None,
    seconds: dict[str, float],
) -> BuildReport:
    """Bring the live version up to the store: delete chunks gone from it, add the new ones."""
    dense, keyword = versions.open(version, builder.embedder)
    ids = np.array([c.id for c in chunks], dtype=np.int64)
    removed = 0
    for index in (keyword, dense):  # each checked on its own: a killed update may have left them apart
        stale = np.setdiff1d(index.ids(), ids)
        removed = max(removed, index.remove(stale) if stale.size else 0)
    have_dense, have_keyword = set(dense.ids().tolist()), set(keyword.ids().tolist())
    todo = [c for c in chunks if c.id not in have_dense or c.id not in have_keyword]
    embedded = _write_chunks(builder, dense, keyword, todo, seconds, progress)
    t = time.perf_counter()
    _validate(dense, keyword, chunks, sample=3 if todo else 0)
    check_unchanged(builder.store, state)
    manifest = {**_manifest(version, chunks, state, params, reason), "state": COMPLETE}
    manifest["updated_at"] = manifest["built_at"]
    manifest["built_at"] = versions.manifest(version)["built_at"]
    versions._write(version, manifest)
    builder.store.record_index_version(INDEX_NAME, version, manifest["source_hash"], params, "updated")
    collect(builder.store, versions)
    seconds["write"] = time.perf_counter() - t
    return BuildReport(version, len(chunks), len(todo), removed, embedded, seconds, True)


def _write_chunks(
    builder: BuildInputs,
    dense: MilvusVectorIndex,
    keyword: MilvusKeywordIndex,
    chunks: Sequence[Chunk],
    seconds: dict[str, float],
    progress: Callable[[int], None] | None,
) -> int:
    """Embed (from the cache where possible) and write ``chunks`` to both collections, a batch at a
    time; returns how many texts were newly embedded."""
    embedded = 0
    documents = {d.id: d for d in builder.store.documents()}
    seconds.setdefault("dense", 0.0)
    seconds.setdefault("bm25", 0.0)
    for start in range(0, len(chunks), BATCH):
        batch = list(chunks[start : start + BATCH])
        t = time.perf_counter()
        texts = {c.sha256: c.text for c in batch}
        windows, fresh = embed_missing(builder.store, builder.embedder, texts, progress=progress, keep=True)
        embedded += fresh
        ids = np.array([c.id for c in batch], dtype=np.int64)
        fields = chunk_fields(builder.store, batch, documents)
        dense.add(ids, [windows[c.sha256] for c in batch], fields=fields, upsert=True)
        seconds["dense"] += time.perf_counter() - t
        t = time.perf_counter()
        tokens = chunk_terms(builder.store, keyword.tokenizer, batch)
        keyword.add(ids, [c.text for c in batch], tokens=tokens, fields=fields, flush=False)
        seconds["bm25"] += time.perf_counter() - t
    dense.flush()
    keyword.flush()
    return embedded


def _validate(
    dense: MilvusVectorIndex, keyword: MilvusKeywordIndex, chunks: Sequence[Chunk], sample: int = 5
) -> None:
    """Refuse a version whose counts differ from the store, or whose sample queries find nothing:
    a chunk's first window must find the chunk, its first words must find something."""
    problems = []
    if len(dense) != len(chunks) or len(keyword) != len(chunks):
        problems.append(f"store has {len(chunks)} chunks, dense {len(dense)}, bm25 {len(keyword)}")
    picks = [chunks[i] for i in np.linspace(0, len(chunks) - 1, num=min(sample, len(chunks)), dtype=int)]
    for chunk in picks if not problems else []:
        window = dense.windows(chunk.id)[0]
        if chunk.id not in {h.id for h in dense.search(window, 5)}:
            problems.append(f"dense search with chunk {chunk.id}'s own vector does not find it")
        words = " ".join(chunk.text.split()[:12])
        lang = analysis_language(chunk)
        read_as = lang if keyword.tokenizer.languages else None  # read as indexed
        found = not keyword.tokenizer.tokenize(words, lang) or keyword.search(words, 5, lang=read_as)
        if not found:
            problems.append(f"bm25 search with chunk {chunk.id}'s first words finds nothing")
    if problems:
        raise IndexMismatchError("index build failed validation: " + "; ".join(problems))


def _params(builder: BuildInputs) -> dict[str, Any]:
    """What a version is built with: an in-place update needs all of it unchanged."""
    milvus = builder.config.milvus
    return {
        "model": builder.embedder.model_name,
        "dimension": builder.embedder.dimension,
        "dense_scoring": builder.config.index.dense_scoring,
        "dense_backend": builder.config.index.dense_backend,
        "bm25": builder.config.bm25.model_dump(),
        "chunking": builder.chunking.model_dump(),
        "milvus": milvus.model_dump(
            include={"index_type", "hnsw_m", "hnsw_ef_construction", "ivf_nlist", "ivf_pq_m", "shards"}
        ),
    }


def _manifest(
    version: int, chunks: Sequence[Chunk], state: int, params: dict[str, Any], reason: str
) -> dict[str, Any]:
    return {
        STORE_STATE: state,
        "format_version": 1,
        "version": version,
        "built_at": datetime.now(timezone.utc).isoformat(),
        "reason": reason,
        "source_hash": source_hash(_hashes(chunks)),
        "chunks": len(chunks),
        "params": params,
    }


def _hashes(chunks: Sequence[Chunk]) -> dict[int, str]:
    return {c.id: c.sha256 for c in chunks}
