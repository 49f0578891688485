"""The index lifecycle and the admin of a data dir: what ``Engine`` does besides answering questions."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_rag.errors import (
    CorruptIndexError,
    HybridRagError,
    IndexMismatchError,
    InputError,
    NoIndexError,
    RemoteServiceError,
    WriterBusyError,
)
from hybrid_rag.indices.build import BuildReport
from hybrid_rag.indices.coverage import dense_status, pending_line
from hybrid_rag.indices.live import IndexConfig, LiveIndexProvider, load_version, open_versions
from hybrid_rag.indices.retention import STORE_STATE
from hybrid_rag.indices.second_dense import check_second_model, second_entry
from hybrid_rag.indices.versions import INDEX_NAME, IndexVersions
from hybrid_rag.ingest.freshness import Freshness
from hybrid_rag.ingest.git import GitHead, GitReport, git_report
from hybrid_rag.ingest.importer import ImportReport, import_file
from hybrid_rag.ingest.pipeline import UPLOADS_DIR, Ingestor, IngestReport
from hybrid_rag.ingest.status import DiskStatus, disk_status
from hybrid_rag.paths import display_path, ingested_root
from hybrid_rag.protocols import Embedder
from hybrid_rag.retrieval.retriever import HybridRetriever
from hybrid_rag.settings import Settings
from hybrid_rag.store import DocumentRecord, MetadataStore
from hybrid_rag.store.writer_lock import WriterLock
from hybrid_rag.types import fields_of

ROLLED_BACK = "rolled back to"  # the status a rollback records in the store's version history


@dataclass(frozen=True)
class Stats:
    data_dir: str
    model: str
    documents: int
    chunks: int
    cached_embeddings: int
    live_version: int | None
    versions: tuple[dict[str, Any], ...]
    bytes_on_disk: Mapping[str, int]
    old_revisions: Mapping[str, int] = field(default_factory=dict)  # retired rows kept for old versions
    index_behind_store: bool = False  # documents and chunks are the live version's; the store is ahead
    behind: str = ""  # why, when it is: a rollback, or a write that has not published yet
    languages: Mapping[str, int] = field(default_factory=dict)  # live chunks per natural language
    model_provisional: bool = False  # embedding.model auto before the first ingest: not chosen yet
    not_dense: str = ""  # the live version's roles and folders found by BM25 only (coverage.pending_line)
    second_vectors: Mapping[str, Any] = field(default_factory=dict)  # the live version's second set

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_of(self, "data_dir", "model", "model_provisional", "documents", "chunks"),
            **fields_of(self, "cached_embeddings", "live_version"),
            "versions": list(self.versions),
            "bytes_on_disk": dict(self.bytes_on_disk),
            "old_revisions": dict(self.old_revisions),
            "index_behind_store": self.index_behind_store,
            **({"behind": self.behind} if self.behind else {}),
            "languages": dict(self.languages),
            **({"not_dense": self.not_dense} if self.not_dense else {}),
            **({"second_vectors": dict(self.second_vectors)} if self.second_vectors else {}),
        }


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _unrecorded(versions: Any, on_disk: set[int], recorded: set[int]) -> tuple[dict[str, Any], ...]:
    """Versions on disk the store's history lacks (a build killed between publishing a version and
    recording it), listed from their manifests so ``stats`` shows every version there is."""
    rows = []
    for version in sorted(on_disk - recorded):
        try:
            manifest = versions.manifest(version)
        except HybridRagError:
            manifest = {}
        rows.append(
            {
                "version": version,
                "built_at": str(manifest.get("built_at", "")),
                "status": "built (not in the history: the build stopped after publishing it)",
                "on_disk": True,
                "source_hash": str(manifest.get("source_hash", ""))[:12],
            }
        )
    return tuple(rows)


class IndexLifecycle:
    """The Engine's admin: ingest and import, the documents it serves, delete, rebuild, rollback,
    the index versions, publication after a stopped write, disk status and stats. A mixin of
    ``Engine`` (``engine.py``), which builds the attributes below."""

    settings: Settings
    store: MetadataStore
    writer: WriterLock
    embedder: Embedder
    index_config: IndexConfig
    indices: LiveIndexProvider
    ingestor: Ingestor
    retriever: HybridRetriever
    freshness: Freshness

    def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        collection: str = "default",
        dry_run: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        metadata: Mapping[str, Any] | None = None,
        stop: Callable[[], bool] | None = None,
        bm25_first: bool | None = None,
    ) -> IngestReport:
        """Ingest folders, files and zips; ``metadata`` (a JSON-like mapping) goes on every document
        and is filterable as ``meta.<key>``. Streamed in ``ingest.batch_chunks`` batches, each
        committed; ``stop()`` true (Ctrl-C) ends it after the current batch (``report.interrupted``,
        no index build; the same ingest again finishes it). ``bm25_first`` overrides
        ``ingest.publish_bm25_first``: BM25 answers while the vectors fill in (``ingest/fill.py``)."""
        with nullcontext() if dry_run else self.writer.hold("ingest"):
            return self.ingestor.ingest_paths(
                paths,
                collection=collection,
                dry_run=dry_run,
                progress=progress,
                metadata=metadata,
                stop=stop,
                bm25_first=bm25_first,
            )

    def import_file(self, path: str | Path, *, collection: str | None = None) -> ImportReport:
        """Import an ``embeddings.json`` / ``embeddings.jsonl`` file, reusing its vectors when their
        dimension is the model's (``ingest/importer.py``)."""
        with self.writer.hold("import"):
            return import_file(path, self.store, self.embedder, self.ingestor.builder, collection=collection)

    def ingested_root(self) -> str | None:
        """The folder outputs show paths relative to (``hybrid_rag/paths.py``); None when empty.
        Read from the store once per index version served (a query asked for it each time)."""
        if not self.store.exists:
            return None
        try:
            version = self.indices.versions.current()
        except RemoteServiceError:  # a Milvus index unreachable: listing documents needs only the store
            version = None
        if version is None:
            return ingested_root(*self.store.path_bounds())
        return self.retriever.ingested_root(version)  # one read per version, shared with the code rules

    def documents(self, collection: str | None = None) -> list[DocumentRecord]:
        """Every document (of ``collection``) of the version served, by path (after a rollback, the
        files that version indexed, as it indexed them); none before the first ingest."""
        return self.store.documents(collection, state=self.served_state()) if self.store.exists else []

    def deletable_paths(self) -> list[str]:
        """The stored paths ``delete`` takes: the version served's and the store's present (after a
        rollback, a file only newer versions hold is not served but returns at the next write)."""
        if not self.store.exists:
            return []
        return sorted({d.path for d in self.documents()} | set(self.store.document_hashes()))

    def unserved_paths(self) -> list[str]:
        """Stored paths the live version does not serve (after ``rollback N``: files only newer
        versions hold); the next write publishes them again unless they are deleted."""
        if not self.store.exists or self.served_state() is None:
            return []
        served = {d.path for d in self.documents()}
        return sorted(p for p in self.store.document_hashes() if p not in served)

    def served_state(self) -> int | None:
        """The store state the live index version was built from; None when none is live (or it
        was built before the store kept its states): then reads see the store's present."""
        versions = open_versions(self.index_config)
        live = versions.current()
        if live is None:
            return None
        state = versions.manifest(live).get(STORE_STATE)
        return None if state is None else int(state)

    def index_behind_store(self) -> bool:
        """Whether the live version lacks the store's last writes (a write killed between its store
        commit and its publication; or a rollback, which the next write catches up)."""
        return self.store.exists and self.ingestor.builder.is_stale()

    def behind_note(self) -> str:
        """A note for answers from a version that lacks the store's last writes (a write stopped
        between its store commit and its publication: a deleted file still served), else ""."""
        if not self.store.exists:
            return ""
        try:  # the version this query is about to search, already loaded: no manifest read a query
            served = self.retriever.indices.get().manifest.get(STORE_STATE)
        except NoIndexError:
            return ""  # the query itself says there is no index
        if not isinstance(served, int) or self.store.generation() <= served or self.rolled_back():
            return ""
        return (
            "the live index lacks the store's last writes (a write stopped before it published): "
            "deleted files may still answer, new ones not yet; any write (`hybrid-rag ingest PATH`, "
            "`delete`, `rebuild`) publishes them"
        )

    def rolled_back(self) -> bool:
        """Whether the live version is one a rollback chose (so being behind the store is meant)."""
        records = self.store.index_versions() if self.store.exists else []
        live = open_versions(self.index_config).current()
        last = max(records, key=lambda r: r.built_at, default=None)  # the history's newest entry
        return last is not None and last.status == ROLLED_BACK and last.version == live

    def finish_publication(self, *, wait: bool = True) -> BuildReport | None:
        """Publish a version of the store's present when the live one is behind it and no rollback
        chose that (a write killed after its store commit): what `stats` and every write do first.
        ``wait`` False: None at once when another write holds the lock (it will publish)."""
        if not self.store.exists:
            return None
        lock = self.writer if wait else WriterLock(self.settings.data_dir, wait_seconds=0)
        try:
            with lock.hold("finish publication"):
                revived = self.ingestor.revive()
                if not revived and (self.rolled_back() or not self.ingestor.builder.is_stale()):
                    return None
                return self.ingestor.builder.build(reason="catch up with the store")
        except WriterBusyError:
            if wait:
                raise
            return None

    def delete(self, paths: Sequence[str]) -> BuildReport:
        """Remove documents by their stored path (absolute, as ``list_documents`` shows them) and
        make a version without them live; InputError names a path the store does not hold. A path
        the served version holds but the store no longer does (a delete killed before it published)
        is deleted by publishing the store's present."""
        if not paths:
            raise InputError("no document path given to delete")
        with self.writer.hold("delete"):
            stored = self.store.document_hashes() if self.store.exists else {}
            missing = [p for p in paths if p not in stored]
            if missing:
                served = {d.path for d in self.documents()} if self.index_behind_store() else set()
                unknown = [p for p in missing if p not in served]
                if unknown:
                    raise InputError(f"no document {unknown[0]!r} in the store")
            present = [p for p in paths if p in stored]
            if present:
                self.store.write_files([], collection="default", delete_paths=present)
            self.ingestor.revive()
            return self.ingestor.builder.build(reason="delete")

    def rebuild(
        self, *, progress: Callable[[int], None] | None = None, second_model: str | None = None
    ) -> BuildReport:
        """Rebuild both indices from the store into a new version, validate it, swap it in;
        ``second_model``: with a second vector set of that model (``indices/second_dense.py``; "off"
        without one; by default the live version's is kept)."""
        check_second_model(second_model, self.embedder.model_name, self.index_config.index.dense_backend)
        with self.writer.hold("rebuild"):
            if self.store.exists:
                self.ingestor.revive()  # a write killed before it did (dropped near-duplicates)
            if not self.store.exists or self.store.chunk_count() == 0:
                raise NoIndexError("nothing to rebuild: the store is empty; run `hybrid-rag ingest PATH`")
            reason = "rebuild" if second_model is None else f"rebuild, second vector set {second_model}"
            return self.ingestor.builder.build(
                full=True, reason=reason, progress=progress, second_model=second_model
            )

    def rollback(self, version: int) -> list[str]:
        """Point the live index at an older version still on disk (the next ingest catches it up);
        the stored paths it does not serve, which the next write brings back (``delete`` them)."""
        with self.writer.hold("rollback"):
            self._rollback(version)
            return self.unserved_paths()

    def _rollback(self, version: int) -> None:
        versions = open_versions(self.index_config)
        manifest = versions.manifest(version) if version in versions.versions() else None
        if manifest is None:
            on_disk = ", ".join(f"v{v}" for v in versions.versions()) or "none"
            raise NoIndexError(f"index version {version} is not on disk (on disk: {on_disk})")
        try:  # a version that cannot load never goes live: the pointer stays where it is
            load_version(versions, version, self.index_config, self.embedder)
        except (CorruptIndexError, IndexMismatchError) as exc:
            message = f"cannot roll back to version {version}, the live index is unchanged: {exc}"
            raise type(exc)(message) from None
        versions.set_current(version)
        self.store.record_index_version(
            INDEX_NAME, version, manifest.get("source_hash", ""), manifest.get("params", {}), ROLLED_BACK
        )

    def versions(self) -> list[dict[str, Any]]:
        """The index versions on disk, oldest first, as ``hybrid-rag versions --json`` lists them."""
        versions = open_versions(self.index_config)
        live = versions.current()
        rows = []
        for v in versions.versions():
            m = versions.manifest(v)
            rows.append(
                {
                    "version": v,
                    "live": v == live,
                    "built_at": m.get("built_at"),
                    "chunks": m.get("chunks"),
                    "reason": m.get("reason"),
                    "model": m.get("params", {}).get("model"),
                    **({"second_dense": m["second_dense"]} if m.get("second_dense") else {}),
                }
            )
        return rows

    def disk_status(self, paths: Sequence[str | Path] = (), *, absolute_paths: bool = False) -> DiskStatus:
        """What changed on disk since the served version was built (``ingest/status.py``): under
        ``paths``, by default the ingested root; paths shown relative to that root."""
        self._require_store()
        root = self.ingested_root()
        roots = [Path(p).resolve().as_posix() for p in paths] or ([root] if root else [])
        found = disk_status(
            self.documents(),
            roots,
            self.settings.loading,
            data_dir=self.settings.data_dir,
            uploads=self.settings.data_dir / UPLOADS_DIR,
            conversion=self.ingestor.settings.conversion(),
            freshness=self.freshness,
        )
        found = dataclasses.replace(found, git=self._git_report(), not_dense=self._not_dense())
        if absolute_paths or not root:
            return found
        return dataclasses.replace(
            found,
            changed=tuple(display_path(p, root) for p in found.changed),
            new=tuple(display_path(p, root) for p in found.new),
            deleted=tuple(display_path(p, root) for p in found.deleted),
        )

    def _git_report(self) -> GitReport | None:
        """What git saw move since the live version's ingest, when it recorded a work tree."""
        versions = open_versions(self.index_config)
        version = versions.current()
        recorded = versions.manifest(version).get("git") if version is not None else None
        indexed = GitHead.from_dict(recorded) if isinstance(recorded, dict) else None
        return git_report(indexed) if indexed is not None else None

    def _not_dense(self) -> str:
        """The live version's BM25-only roles and folders, the line query answers carry ("" if none)."""
        versions = open_versions(self.index_config)
        version = versions.current()
        return pending_line(versions.manifest(version)) if version is not None else ""

    def _require_store(self) -> None:
        if not self.store.exists:
            raise NoIndexError(f"nothing ingested in {self.settings.data_dir}: run `hybrid-rag ingest PATH`")

    def stats(self) -> Stats:
        """What the data dir holds; ``documents`` and ``chunks`` are the live version's (after a
        rollback, that version's files), ``index_behind_store`` says when the store is ahead."""
        versions = open_versions(self.index_config)
        live = versions.current()
        served = self.served_state()
        counts = (
            self.store.counts(state=served)
            if self.store.exists
            else {"documents": 0, "chunks": 0, "cached_embeddings": 0}
        )
        if live is not None and served is not None:
            counts["chunks"] = int(versions.manifest(live).get("chunks", counts["chunks"]))
        behind = self.index_behind_store()
        partial = dense_status(versions.manifest(live)) if behind and live is not None else ""
        why = ""
        if behind and self.rolled_back():
            why = f"rolled back to v{live}: the next write publishes the store's present"
        elif partial:  # a BM25-first ingest stopped while its vectors filled in (``ingest/fill.py``)
            why = (
                f"v{live} answers by BM25 while its vectors fill in (dense {partial}): the next "
                "`hybrid-rag ingest` carries on embedding"
            )
        elif behind:
            why = (
                "the store holds writes no version publishes yet (a write stopped before it published, "
                "or one is running): any write (`hybrid-rag ingest PATH`, `delete`, `rebuild`) publishes them"
            )
        records = self.store.index_versions() if self.store.exists else []
        on_disk = set(versions.versions())
        sizes = {
            "store": sum(
                _tree_size(p) for p in self.settings.data_dir.glob(self.settings.paths.store_file + "*")
            )
        }
        if isinstance(versions, IndexVersions):
            sizes.update({f"v{v}": _tree_size(versions.directory(v)) for v in on_disk})
        else:  # every version in one milvus-lite folder (nothing local for a server)
            sizes["milvus"] = _tree_size(Path(self.index_config.milvus.uri))
        model = self.embedder.model_name  # first: auto chooses here when the store holds chunks
        return Stats(
            data_dir=str(self.settings.data_dir),
            model=model,
            model_provisional=bool(getattr(self.embedder, "provisional", False)),
            documents=counts["documents"],
            chunks=counts["chunks"],
            cached_embeddings=counts["cached_embeddings"],
            live_version=live,
            versions=tuple(
                {
                    "version": r.version,
                    "built_at": r.built_at.isoformat(),
                    "status": r.status,
                    "on_disk": r.version in on_disk,
                    "source_hash": r.source_hash[:12],
                }
                for r in records
            )
            + _unrecorded(versions, on_disk, {r.version for r in records}),
            bytes_on_disk=sizes,
            old_revisions=self.store.old_revisions() if self.store.exists else {},
            index_behind_store=behind,
            behind=why,
            languages=self.store.language_counts(state=served) if self.store.exists else {},
            not_dense=pending_line(versions.manifest(live)) if live is not None else "",
            second_vectors=_second_vectors(versions.manifest(live)) if live is not None else {},
        )


def _second_vectors(manifest: dict[str, Any]) -> dict[str, Any]:
    """The model and chunk count of a version's second vector set (``indices/second_dense.py``), or {}."""
    entry = second_entry(manifest)
    return {} if entry is None else {"model": str(entry["model"]), "chunks": int(entry.get("chunks", 0))}
