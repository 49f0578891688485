"""Ingest: load → chunk → dedupe → embed (cached) → store, streamed in bounded batches → one index build.

Only files whose content (or collection) changed are re-chunked and re-embedded; documents under
an ingested folder that are gone from it are deleted. A first pass reads and hashes every file to
plan the changes (``--dry-run`` stops there; file texts are not kept). The second pass reads the
files to write again, one at a time, and streams them through ``stream.BatchWriter``: every
``ingest.batch_chunks`` new texts are embedded and committed with the files they complete, so
memory stays flat and a killed ingest, re-run, embeds at most one batch again. The index build
runs once at the end, from the store; until it does, the live version is the one before the ingest.
A ``stop`` callable (Ctrl-C in the CLI) ends the ingest after the current batch, without a build.

With ``ingest.publish_bm25_first`` (``fill.py``) the files are stored before they are embedded, a
BM25-only version goes live as soon as they are, and the embedding follows, publishing partial
versions, then the complete one; a re-run after a kill carries on embedding.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hybrid_rag.errors import InputError
from hybrid_rag.indices.build import BuildReport, IndexBuilder
from hybrid_rag.ingest.archive import is_zip, load_zip
from hybrid_rag.ingest.bm25_first import bm25_first_pays
from hybrid_rag.ingest.chunking import chunk_file
from hybrid_rag.ingest.converters.cache import Conversion
from hybrid_rag.ingest.fill import DenseFill, FillSettings
from hybrid_rag.ingest.freshness import unchanged_by_stat
from hybrid_rag.ingest.git import git_head
from hybrid_rag.ingest.languages import analysis_lang, with_languages
from hybrid_rag.ingest.loaders import iter_files, load_file
from hybrid_rag.ingest.metadata import check_metadata, with_metadata
from hybrid_rag.ingest.protected import Protected
from hybrid_rag.ingest.stream import BatchWriter, WriteCounts
from hybrid_rag.ingest.stream_dedupe import Duplicate, StreamDeduper, revive_duplicates, scope_of
from hybrid_rag.ingest.term_prefetch import TermPrefetch, prefetch_workers
from hybrid_rag.locators import chunk_meta
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import (
    ArchiveSettings,
    ChunkingSettings,
    ConvertSettings,
    DedupeSettings,
    LoadingSettings,
)
from hybrid_rag.store import DocumentRecord, FileChunks, MetadataStore
from hybrid_rag.symbols.extract import file_references, file_symbols
from hybrid_rag.symbols.extract import finder as code_definitions
from hybrid_rag.types import ChunkSpan, LoadedFile, Locator, SkippedFile, SourceType

CONVERTED_DIR = "converted"  # in the data dir: converted documents' text, by content hash
UPLOADS_DIR = "uploads"  # in the data dir: uploaded documents, the one part of it ever ingested

Progress = Callable[[str, int, int], None]  # (stage, done, total): "files", "chunks", "index"
Stop = Callable[[], bool]  # asked between files and batches: True ends the ingest there


@dataclass(frozen=True)
class IngestSettings:
    """The sections ingest reads: what to load, how to chunk, what counts as a near-duplicate."""

    loading: LoadingSettings
    archive: ArchiveSettings
    chunking: ChunkingSettings
    dedupe: DedupeSettings
    batch_chunks: int = 64  # new texts embedded and committed together (ingest.batch_chunks)
    data_dir: Path | None = None  # never ingested (an ingest of "." must not read its own store)
    convert: ConvertSettings = field(default_factory=ConvertSettings)  # documents as text
    bm25_first: bool = False  # ingest.publish_bm25_first: store, publish BM25, then embed (fill.py)
    bm25_first_min_bytes: int = 0  # ... when the files to write hold at least this many bytes
    bm25_first_min_seconds: float = 0.0  # ... or their embedding is estimated this long (bm25_first.py)
    fill: FillSettings = field(default_factory=FillSettings)
    tokenize_ahead: bool = False  # ingest.tokenize_ahead: BM25-first ingests tokenise in other processes
    # hybrid-rag's own folders and files wherever configured (indices, logs; store, keys file):
    # never ingested, by path or hard link (ingest/protected.py)
    protected_folders: tuple[Path, ...] = ()
    protected_files: tuple[Path, ...] = ()

    def protected(self) -> Protected:
        """What this ingest never reads, as the disk holds it now (a keys file made since counts)."""
        home = (self.data_dir,) if self.data_dir is not None else ()
        return Protected.of((*home, *self.protected_folders), self.protected_files)

    def conversion(self) -> Conversion:
        """How documents are converted, cached under ``<data_dir>/converted`` when there is one."""
        cache = self.data_dir / CONVERTED_DIR if self.data_dir is not None else None
        return Conversion(self.convert, cache)


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
class IngestReport:
    """What an ingest did. ``interrupted``: stopped (Ctrl-C) after ``files_written`` files were
    committed; no index was built, and the same ingest run again finishes the work."""

    plan: IngestPlan
    chunks_written: int = 0
    embedded: int = 0  # chunk texts embedded by this ingest
    build: BuildReport | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    dry_run: bool = False
    duplicates: tuple[Duplicate, ...] = ()
    reused: int = 0  # chunks whose vectors came from the embedding cache
    files_written: int = 0
    interrupted: bool = False
    partial_versions: int = 0  # versions published before the vectors were all in (BM25-first)

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
            "files_written": self.files_written,
            "chunks_written": self.chunks_written,
            "embedded": self.embedded,
            "reused": self.reused,
            "interrupted": self.interrupted,
            "partial_versions": self.partial_versions,
            "dry_run": self.dry_run,
            "index_version": self.build.version if self.build else None,
            "seconds": self.seconds,
        }


def with_locators(spans: Sequence[ChunkSpan], locators: Sequence[Locator]) -> list[ChunkSpan]:
    """Each chunk of a converted document with its page/slide/cell/row in its own metadata
    (``converters/locators.py``); other files' chunks as they are."""
    if not locators:
        return list(spans)
    return [replace(s, meta={**s.meta, **chunk_meta(locators, s.start_line, s.end_line)}) for s in spans]


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


def with_code_rewritten(plan: IngestPlan, files: Sequence[LoadedFile]) -> IngestPlan:
    """``plan`` with its unchanged code files moved to ``changed`` (written again, vectors from the
    cache), so a store migrated from before the symbol index records their definitions."""
    code = {f.path for f in files if f.source_type is SourceType.CODE}
    again = tuple(p for p in plan.unchanged if p in code)
    if not again:
        return plan
    kept = tuple(p for p in plan.unchanged if p not in code)
    return replace(plan, changed=plan.changed + again, unchanged=kept)


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
        stop: Stop | None = None,
        bm25_first: bool | None = None,
    ) -> IngestReport:
        """Ingest folders and files, each document with ``metadata`` (over its front matter);
        raises InputError when they hold nothing ingestible. ``bm25_first`` overrides
        ``ingest.publish_bm25_first`` for this call."""
        check_metadata(metadata)  # refused whole (over a limit) before any file is read
        start = time.perf_counter()
        files: list[LoadedFile] = []  # without their texts: a file is read again when it is written
        skipped: list[SkippedFile] = []
        in_memory: dict[str, LoadedFile] = {}  # zip members
        conversion = self.settings.conversion()
        archives = [Path(p) for p in paths if is_zip(Path(p))]
        for archive in archives:  # read whole, or refused whole: never half an archive
            members, passed = load_zip(archive, self.settings.loading, self.settings.archive, conversion)
            in_memory.update((m.path, m) for m in members)
            files.extend(with_metadata(m, metadata) for m in members)
            skipped.extend(passed)
        plain = [Path(p) for p in paths if Path(p) not in archives]
        home = self.settings.data_dir
        exclude, allow = ([home], [home / UPLOADS_DIR]) if home is not None else ([], [])
        # a stored file whose size and mtime are those recorded is planned unchanged unread; with
        # attached metadata every file is read (its hash covers the metadata: ``metadata.py``)
        documents = self.store.documents()  # read once: the stat hook and the plan share it
        known = None if metadata or not plain else unchanged_by_stat(documents)
        walk = (
            iter_files(
                plain,
                self.settings.loading,
                exclude=exclude,
                conversion=conversion,
                allow=allow,
                protected=self.settings.protected(),
                known=known,
            )
            if plain
            else ()
        )
        for item in walk:
            if stop is not None and stop():
                return IngestReport(IngestPlan(skipped=tuple(skipped)), interrupted=True)
            if isinstance(item, LoadedFile):  # planned by the hash that covers the metadata
                files.append(with_metadata(replace(item, text="") if item.text else item, metadata))
            else:
                skipped.append(item)
        roots = [Path(p).resolve().as_posix() for p in paths if Path(p).is_dir() or Path(p) in archives]
        if not files and not self._stored_under(roots):
            reasons = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:5])
            where = ", ".join(str(p) for p in paths)
            raise InputError(
                f"no text or source files to ingest in {where}" + (f" ({reasons})" if reasons else "")
            )
        loading = self.settings.loading

        def read(f: LoadedFile) -> LoadedFile | None:
            again = in_memory.get(f.path) or load_file(
                Path(f.path), loading.max_file_bytes, settings=loading, conversion=conversion
            )
            if not isinstance(again, LoadedFile):
                return None
            # under the path the walk planned it by (a file below a link leading out of the root
            # keeps the link's path; load_file names it by its real path)
            return with_metadata(replace(again, path=f.path), metadata)

        seconds = {"scan": time.perf_counter() - start}
        prepare = getattr(self.embedder, "prepare", None)  # auto: a fresh data dir's model, by its files
        if prepare is not None and not dry_run:  # the walk's own listing: one walk, its exclusions
            prepare([f.path for f in files], lambda path: in_memory[path].text if path in in_memory else None)
        first = self.settings.bm25_first if bm25_first is None else bm25_first
        head = None if dry_run or not plain else git_head(plain)  # kept in the manifest: ``status``
        return self._ingest(
            files,
            read,
            collection,
            skipped,
            roots,
            dry_run,
            progress,
            stop,
            seconds,
            first,
            git=head.to_dict() if head is not None else None,
            documents=documents,
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
        stop: Stop | None = None,
        bm25_first: bool | None = None,
    ) -> IngestReport:
        """Ingest files already in memory (a BEIR corpus, an import)."""
        first = self.settings.bm25_first if bm25_first is None else bm25_first
        return self._ingest(
            files, lambda f: f, collection, skipped, roots, dry_run, progress, stop, {}, first
        )

    def _ingest(
        self,
        files: Sequence[LoadedFile],
        read: Callable[[LoadedFile], LoadedFile | None],
        collection: str,
        skipped: Sequence[SkippedFile],
        roots: Sequence[str],
        dry_run: bool,
        progress: Progress | None,
        stop: Stop | None,
        seconds: dict[str, float],
        bm25_first: bool = False,
        *,
        git: Mapping[str, Any] | None = None,
        documents: Sequence[DocumentRecord] | None = None,
    ) -> IngestReport:
        documents = self.store.documents() if documents is None else documents
        stored = {d.path: (d.sha256, d.collection) for d in documents}
        plan = plan_changes(files, skipped, stored, collection=collection, roots=roots)
        backfill = not dry_run and bool(stored) and self.store.symbols_pending()
        if backfill:  # a store from before symbols: its code files are written again to record them
            plan = with_code_rewritten(plan, files)
        if dry_run:
            return IngestReport(plan, dry_run=True, seconds=seconds)
        if not plan.has_changes:
            if not self.revive() and not self.builder.is_stale():
                return IngestReport(plan, seconds=seconds)
            report = IngestReport(plan, seconds=seconds)
            if bm25_first:  # a killed BM25-first ingest's vectors: carried on here
                report = self._fill(report, progress, stop, first=False)
                if report.interrupted:
                    return report
            t = time.perf_counter()
            build = self.builder.build(reason="catch up with the store", git=git)
            return replace(report, build=build, seconds={**seconds, "index": time.perf_counter() - t})

        todo = set(plan.added) | set(plan.changed)
        to_write = [f for f in files if f.path in todo]
        # an ingest done in seconds is embedded as it streams: its one version comes soon enough
        bm25_first = bm25_first and bm25_first_pays(
            to_write,
            self.embedder,
            max_tokens=self.settings.chunking.max_tokens,
            min_bytes=self.settings.bm25_first_min_bytes,
            min_seconds=self.settings.bm25_first_min_seconds,
        )
        counts, duplicates, interrupted = self._write(
            to_write, read, plan, collection, progress, stop or (lambda: False), seconds, embed=not bm25_first
        )
        report = IngestReport(
            plan,
            chunks_written=counts.chunks_written,
            embedded=counts.embedded,
            seconds=seconds,
            duplicates=tuple(duplicates),
            reused=counts.reused,
            files_written=counts.files_written,
            interrupted=interrupted,
        )
        if interrupted:
            return report
        if backfill:
            self.store.symbols_recorded()
        if bm25_first:
            report = self._fill(report, progress, stop)
            if report.interrupted:
                return report
        t = time.perf_counter()
        if progress:
            progress("index", 0, 1)
        build = self.builder.build(reason="ingest", git=git)
        if progress:
            progress("index", 1, 1)
        seconds["index"] = time.perf_counter() - t
        return replace(report, build=build)

    def _write(
        self,
        to_write: Sequence[LoadedFile],
        read: Callable[[LoadedFile], LoadedFile | None],
        plan: IngestPlan,
        collection: str,
        progress: Progress | None,
        stop: Stop,
        seconds: dict[str, float],
        *,
        embed: bool = True,
    ) -> tuple[WriteCounts, list[Duplicate], bool]:
        """Read, chunk, dedupe and hand each file to a BatchWriter; True when ``stop`` ended it."""
        for stage in ("chunk", "dedupe", "embed", "store"):
            seconds.setdefault(stage, 0.0)
        t = time.perf_counter()
        replaced = {f.path for f in to_write} | set(plan.deleted)
        dedupe = StreamDeduper(self.store, self.settings.dedupe, replaced=replaced)
        seconds["dedupe"] += time.perf_counter() - t
        total_bytes = sum(f.size for f in to_write) or 1
        seen = {"bytes": 0, "chunks": 0}

        def committed(counts: WriteCounts) -> None:
            dedupe.flush()
            if progress:  # the total: chunks so far, and the rest estimated from the bytes left
                rate = seen["chunks"] / max(seen["bytes"], 1)
                estimate = seen["chunks"] + round((total_bytes - seen["bytes"]) * rate)
                done = counts.embedded + counts.reused if embed else counts.chunks_written
                progress("chunks", done, max(estimate, done))

        writer = BatchWriter(
            self.store,
            self.embedder,
            collection=collection,
            batch_chunks=self.settings.batch_chunks,
            seconds=seconds,
            on_commit=committed,
            stop=stop,
            embed=embed,
        )
        duplicates: list[Duplicate] = []
        ahead = None if embed else self._term_prefetch()  # BM25 terms tokenised beside the writes
        try:
            for i, planned in enumerate(to_write, start=1):
                if stop():
                    writer.stop()
                    return writer.counts, duplicates, True
                t = time.perf_counter()
                f = read(planned)  # None: gone or unreadable since the plan (the next ingest sees it)
                found = None if f is None else code_definitions(f)  # one definition finder a file
                spans = (
                    []
                    if f is None
                    else with_languages(
                        with_locators(chunk_file(f, self.settings.chunking, found), f.locators), f
                    )
                )
                symbols = file_symbols(f, found) if f is not None else []
                references = file_references(f, found) if f is not None else []
                seconds["chunk"] += time.perf_counter() - t
                seen["bytes"] += planned.size
                if f is not None:
                    t = time.perf_counter()
                    duplicate_of, dropped = dedupe.filter(f.path, spans, scope_of(collection, f.meta))
                    seconds["dedupe"] += time.perf_counter() - t
                    duplicates.extend(dropped)
                    seen["chunks"] += len(spans) - len(duplicate_of)
                    fc = FileChunks(f, spans, duplicate_of, symbols, references)
                    writer.add(fc)
                    if ahead is not None:
                        ahead.add([(sp.sha256, sp.text, analysis_lang(sp, f)) for sp in fc.kept])
                if progress:
                    progress("files", i, len(to_write))
            if stop():
                writer.stop()
                return writer.counts, duplicates, True
            writer.finish(plan.deleted)
            dedupe.flush()
            if ahead is not None:
                t = time.perf_counter()
                ahead.finish()  # the BM25-only build finds the terms in the store's cache
                seconds["tokenize"] = seconds.get("tokenize", 0.0) + time.perf_counter() - t
        finally:
            if ahead is not None:
                ahead.close()
        self.revive()
        return writer.counts, duplicates, False

    def _term_prefetch(self) -> TermPrefetch | None:
        """The prefetch of a BM25-first ingest's terms (``ingest.tokenize_ahead``), None on one core."""
        workers = prefetch_workers()
        if not self.settings.tokenize_ahead or workers < 1:
            return None
        return TermPrefetch(self.store, self.builder.config.bm25, workers=workers)

    def revive(self) -> int:
        """Index again the dropped near-duplicates whose kept chunk is gone (``stream_dedupe``)."""
        return revive_duplicates(self.store, self.settings.dedupe)

    def _fill(
        self, report: IngestReport, progress: Progress | None, stop: Stop | None, *, first: bool = True
    ) -> IngestReport:
        """Embed the stored chunks' missing vectors (``fill.py``), a BM25-only version ``first``."""
        fill = DenseFill(self.store, self.embedder, self.builder, self.settings.fill)
        done = fill.run(report.seconds, progress, stop or (lambda: False), first=first)
        return replace(
            report,
            embedded=report.embedded + done.embedded,
            partial_versions=done.partials,
            interrupted=done.interrupted,
            build=done.last if done.interrupted else report.build,
        )

    def _stored_under(self, roots: Sequence[str]) -> bool:
        prefixes = tuple(r.rstrip("/") + "/" for r in roots)
        return bool(prefixes) and any(p.startswith(prefixes) for p in self.store.document_hashes())
