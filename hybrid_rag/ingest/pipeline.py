"""Ingest: load → chunk → embed (cached) → one store transaction → a new index version.

Only files whose content (or collection) changed are re-chunked and re-embedded; documents under
an ingested folder that are gone from it are deleted. Embeddings are computed before the store
transaction and written inside it, so a failure at any step leaves the store as it was, and the
index build that follows reads every vector from the cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_rag.errors import InputError
from hybrid_rag.indices.build import BuildReport, IndexBuilder
from hybrid_rag.ingest.archive import is_zip, load_zip
from hybrid_rag.ingest.chunking import chunk_file
from hybrid_rag.ingest.dedupe import NearDuplicateFilter
from hybrid_rag.ingest.loaders import iter_files
from hybrid_rag.ingest.metadata import with_metadata
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import ArchiveSettings, ChunkingSettings, DedupeSettings, LoadingSettings
from hybrid_rag.store import FileChunks, MetadataStore
from hybrid_rag.store.embedding_cache import embed_missing
from hybrid_rag.types import LoadedFile, SkippedFile

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class IngestSettings:
    """The sections ingest reads: what to load, how to chunk, what counts as a near-duplicate."""

    loading: LoadingSettings
    archive: ArchiveSettings
    chunking: ChunkingSettings
    dedupe: DedupeSettings
    embed_batch: int  # texts embedded between progress reports
    data_dir: Path | None = None  # never ingested (an ingest of "." must not read its own store)


@dataclass(frozen=True)
class IngestPlan:
    """What an ingest would change, by document path."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.changed or self.deleted)


@dataclass(frozen=True)
class Duplicate:
    """A chunk that was not stored because it nearly duplicates a kept one."""

    path: str
    start_line: int
    end_line: int
    duplicate_of: str  # sha256 of the kept chunk


@dataclass(frozen=True)
class IngestReport:
    plan: IngestPlan
    chunks_written: int = 0
    embedded: int = 0
    build: BuildReport | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    dry_run: bool = False
    duplicates: tuple[Duplicate, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The shape of ``ingest --json`` and of the HTTP API's ingest job result."""
        plan = self.plan
        return {
            "added": list(plan.added),
            "changed": list(plan.changed),
            "unchanged": len(plan.unchanged),
            "deleted": list(plan.deleted),
            "skipped": [{"path": s.path, "reason": s.reason} for s in plan.skipped],
            "duplicates": [
                {
                    "path": d.path,
                    "start_line": d.start_line,
                    "end_line": d.end_line,
                    "duplicate_of": d.duplicate_of,
                }
                for d in self.duplicates
            ],
            "chunks_written": self.chunks_written,
            "embedded": self.embedded,
            "dry_run": self.dry_run,
            "index_version": self.build.version if self.build else None,
            "seconds": self.seconds,
        }


def plan_changes(
    files: Sequence[LoadedFile],
    skipped: Sequence[SkippedFile],
    stored: dict[str, tuple[str, str]],
    *,
    collection: str,
    roots: Iterable[str] = (),
) -> IngestPlan:
    """Compare loaded files with the stored (sha256, collection) by path.

    A stored document under one of ``roots`` (folders that were walked) that was not loaded
    this time, because it is gone or is now skipped, is deleted.
    """
    added, changed, unchanged = [], [], []
    for f in files:
        before = stored.get(f.path)
        if before is None:
            added.append(f.path)
        elif before != (f.sha256, collection):
            changed.append(f.path)
        else:
            unchanged.append(f.path)
    seen = {f.path for f in files}
    prefixes = tuple(r.rstrip("/") + "/" for r in roots)
    deleted = sorted(p for p in stored if p not in seen and prefixes and p.startswith(prefixes))
    return IngestPlan(tuple(added), tuple(changed), tuple(unchanged), tuple(deleted), tuple(skipped))


class Ingestor:
    def __init__(
        self,
        store: MetadataStore,
        embedder: Embedder,
        builder: IndexBuilder,
        settings: IngestSettings,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.builder = builder
        self.settings = settings

    def ingest_paths(
        self,
        paths: Sequence[str | Path],
        *,
        collection: str = "default",
        dry_run: bool = False,
        progress: Progress | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> IngestReport:
        """Ingest folders and files, each document with ``metadata`` (over its front matter);
        raises InputError when they hold nothing ingestible."""
        files: list[LoadedFile] = []
        skipped: list[SkippedFile] = []
        archives = [Path(p) for p in paths if is_zip(Path(p))]
        for archive in archives:  # read whole, or refused whole: never half an archive
            members, passed = load_zip(archive, self.settings.loading, self.settings.archive)
            files.extend(members)
            skipped.extend(passed)
        plain = [Path(p) for p in paths if Path(p) not in archives]
        exclude = [self.settings.data_dir] if self.settings.data_dir is not None else []
        for item in iter_files(plain, self.settings.loading, exclude=exclude) if plain else ():
            (files if isinstance(item, LoadedFile) else skipped).append(item)
        roots = [Path(p).resolve().as_posix() for p in paths if Path(p).is_dir() or Path(p) in archives]
        if not files and not self._stored_under(roots):
            reasons = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:5])
            where = ", ".join(str(p) for p in paths)
            raise InputError(
                f"no text or source files to ingest in {where}" + (f" ({reasons})" if reasons else "")
            )
        files = [with_metadata(f, metadata) for f in files]
        return self.ingest_files(
            files, collection=collection, skipped=skipped, roots=roots, dry_run=dry_run, progress=progress
        )

    def ingest_files(
        self,
        files: Sequence[LoadedFile],
        *,
        collection: str = "default",
        skipped: Sequence[SkippedFile] = (),
        roots: Sequence[str] = (),
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> IngestReport:
        seconds: dict[str, float] = {}
        stored = {d.path: (d.sha256, d.collection) for d in self.store.documents()}
        plan = plan_changes(files, skipped, stored, collection=collection, roots=roots)
        if dry_run:
            return IngestReport(plan, dry_run=True)
        if not plan.has_changes:
            if not self.builder.is_stale():
                return IngestReport(plan)
            t = time.perf_counter()
            build = self.builder.build(reason="catch up with the store")
            return IngestReport(plan, build=build, seconds={"index": time.perf_counter() - t})

        t = time.perf_counter()
        todo = set(plan.added) | set(plan.changed)
        to_write = [f for f in files if f.path in todo]
        chunked: list[FileChunks] = []
        for i, f in enumerate(to_write, start=1):
            chunked.append(FileChunks(f, chunk_file(f, self.settings.chunking)))
            if progress:
                progress("chunk", i, len(to_write))
        seconds["chunk"] = time.perf_counter() - t

        t = time.perf_counter()
        chunked, duplicates = self.drop_near_duplicates(chunked, replaced=todo | set(plan.deleted))
        seconds["dedupe"] = time.perf_counter() - t

        t = time.perf_counter()
        texts = {sp.sha256: sp.text for fc in chunked for sp in fc.spans}
        done = 0

        def _embedded(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress("embed", done, len(texts))

        windows, embedded = embed_missing(
            self.store,
            self.embedder,
            texts,
            batch_size=self.settings.embed_batch,
            progress=_embedded,
            keep=True,  # a failure half-way (an embedding server gone) keeps what was embedded
        )
        seconds["embed"] = time.perf_counter() - t

        t = time.perf_counter()
        new_ids = self.store.write_files(
            chunked,
            collection=collection,
            delete_paths=plan.deleted,
            embeddings=windows,
            model=self.embedder.model_name,
        )
        seconds["store"] = time.perf_counter() - t

        t = time.perf_counter()
        if progress:
            progress("index", 0, 1)
        build = self.builder.build(reason="ingest")
        if progress:
            progress("index", 1, 1)
        seconds["index"] = time.perf_counter() - t
        return IngestReport(plan, len(new_ids), embedded, build, seconds, duplicates=duplicates)

    def drop_near_duplicates(
        self, chunked: list[FileChunks], *, replaced: set[str]
    ) -> tuple[list[FileChunks], tuple[Duplicate, ...]]:
        """Drop new chunks that nearly duplicate a kept chunk (MinHash LSH, ``dedupe.threshold``).

        Kept chunks are those of stored files that this ingest leaves alone, then new chunks in
        order; their signatures are cached in the store, so an ingest hashes only new text.
        """
        cfg = self.settings.dedupe
        if not cfg.enabled:
            return chunked, ()
        finder = NearDuplicateFilter(cfg)
        existing = [(c.sha256, c.text) for c in self.store.iter_chunks() if c.path not in replaced]
        cached = self.store.cached_signatures(cfg.num_perm, (sha for sha, _ in existing))
        signatures = {sha: finder.signature(text) for sha, text in existing if sha not in cached}
        signatures.update(
            {sha: None if v is None else finder.from_hashvalues(v) for sha, v in cached.items()}
        )
        missing = {sha: m for sha, m in signatures.items() if sha not in cached}
        new_signatures = {sp.sha256: finder.signature(sp.text) for fc in chunked for sp in fc.spans}
        new = [(sp.sha256, new_signatures[sp.sha256]) for fc in chunked for sp in fc.spans]
        dropped = finder.find_duplicates(new, [(sha, signatures[sha]) for sha, _ in existing])
        fresh = {sha: m for sha, m in new_signatures.items() if sha not in dropped}
        fresh.update(missing)
        self.store.put_signatures(
            cfg.num_perm, {sha: None if m is None else m.hashvalues for sha, m in fresh.items()}
        )
        seen: set[str] = set()
        kept: list[FileChunks] = []
        duplicates: list[Duplicate] = []
        for fc in chunked:
            spans = []
            for sp in fc.spans:
                if sp.sha256 in dropped or sp.sha256 in seen:  # a near copy, or an exact repeat
                    duplicates.append(
                        Duplicate(fc.file.path, sp.start_line, sp.end_line, dropped.get(sp.sha256, sp.sha256))
                    )
                else:
                    seen.add(sp.sha256)
                    spans.append(sp)
            kept.append(FileChunks(fc.file, spans))
        return kept, tuple(duplicates)

    def _stored_under(self, roots: Sequence[str]) -> bool:
        prefixes = tuple(r.rstrip("/") + "/" for r in roots)
        return bool(prefixes) and any(p.startswith(prefixes) for p in self.store.document_hashes())
