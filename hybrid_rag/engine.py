"""The composition root: every stage built from one Settings, each constructor cheap (STYLE 8)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_rag.context import Context, ContextBuilder, build_prompt, cached_embed, cited_ids, fragment_cuts
from hybrid_rag.errors import (
    CorruptIndexError,
    HybridRagError,
    IndexMismatchError,
    InputError,
    NoIndexError,
    RemoteServiceError,
    WriterBusyError,
    describe,
)
from hybrid_rag.generation import make_generator
from hybrid_rag.indices.build import BuildReport, IndexBuilder
from hybrid_rag.indices.coverage import dense_status
from hybrid_rag.indices.live import IndexConfig, LiveIndexProvider, load_version, open_versions
from hybrid_rag.indices.retention import STORE_STATE
from hybrid_rag.indices.versions import INDEX_NAME, IndexVersions
from hybrid_rag.ingest.fill import FillSettings
from hybrid_rag.ingest.freshness import Freshness, mark_stale
from hybrid_rag.ingest.importer import ImportReport, import_file
from hybrid_rag.ingest.pipeline import UPLOADS_DIR, Ingestor, IngestReport, IngestSettings
from hybrid_rag.ingest.protected import keys_file_path
from hybrid_rag.ingest.status import DiskStatus, disk_status
from hybrid_rag.lang.query import language_override, query_language
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.paths import display_path, ingested_root, shown_result
from hybrid_rag.protocols import Embedder
from hybrid_rag.querylog import QueryLog, make_record
from hybrid_rag.retrieval.expansion import QueryExpander
from hybrid_rag.retrieval.rerank import make_reranker
from hybrid_rag.retrieval.retriever import HybridRetriever as Pipeline
from hybrid_rag.retrieval.retriever import resolve_flags
from hybrid_rag.retrieval.selfcheck import Checked, SelfCheck, cosine_range
from hybrid_rag.settings import Settings, load_settings
from hybrid_rag.store import DocumentRecord, MetadataStore
from hybrid_rag.store.writer_lock import WriterLock
from hybrid_rag.symbols.model import SymbolMatch
from hybrid_rag.symbols.search import OutlineEntry
from hybrid_rag.symbols.search import find as find_symbols
from hybrid_rag.symbols.search import outline as symbol_outline
from hybrid_rag.symbols.served import resolve_path, served_state, shown_matches, shown_outline
from hybrid_rag.types import QueryResult

ROLLED_BACK = "rolled back to"  # the status a rollback records in the store's version history


@dataclass(frozen=True)
class Answer:
    """What ``ask`` gives: the context, the prompt sent, and the answer (None without a generator,
    or when it failed: then ``error`` says why)."""

    question: str
    context: Context
    checked: Checked | None
    system: str
    prompt: str
    text: str | None
    error: str | None = None

    @property
    def cited(self) -> tuple[int, ...]:
        """The context ids the answer cites, in order of first citation."""
        return tuple(cited_ids(self.text)) if self.text else ()

    def to_dict(self) -> dict[str, Any]:
        sources = {s.citation: s.ref for s in self.context.sources}
        return {
            "question": self.question,
            "answer": self.text,
            "error": self.error,
            "cited": [{"id": n, "source": sources.get(n)} for n in self.cited],
            "context": self.context.to_dict(),
            "prompt": self.prompt,
            **({"self_check": self.checked.to_dict()} if self.checked is not None else {}),
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "data_dir": self.data_dir,
            "model": self.model,
            "model_provisional": self.model_provisional,
            "documents": self.documents,
            "chunks": self.chunks,
            "cached_embeddings": self.cached_embeddings,
            "live_version": self.live_version,
            "versions": list(self.versions),
            "bytes_on_disk": dict(self.bytes_on_disk),
            "old_revisions": dict(self.old_revisions),
            "index_behind_store": self.index_behind_store,
            **({"behind": self.behind} if self.behind else {}),
            "languages": dict(self.languages),
        }


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


class Engine:
    """Store, embedder, indices, retriever and ingestor for one data directory."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.store = MetadataStore(settings.store_path, url=settings.store.url, indices=settings.indices_dir)
        # every write below holds it: one writer at a time on the data dir, across processes
        self.writer = WriterLock(settings.data_dir, wait_seconds=settings.store.writer_wait_seconds)
        self.embedder = embedder if embedder is not None else make_embedder(settings.embedding)
        bind = getattr(self.embedder, "bind_data_dir", None)  # embedding.model: auto (models/auto.py)
        if bind is not None:
            bind(settings.indices_dir, lambda: self.store.language_counts() if self.store.exists else {})
        index_config = self.index_config = IndexConfig.of(settings)
        self.indices = LiveIndexProvider(index_config, self.embedder)
        self.generator = make_generator(settings.generator)
        expander = QueryExpander(
            settings.expansion,
            self.embedder,
            self.generator,
            retrieval=settings.retrieval,
            bm25=settings.bm25,
            encoding=settings.chunking.encoding,
        )
        self.retriever = HybridRetriever(
            self.store,
            self.embedder,
            self.indices,
            expander,
            retrieval=settings.retrieval,
            features=settings.features,
            rerank=settings.rerank,
            mmr=settings.mmr,
            reranker=make_reranker(
                settings.rerank,
                self.embedder,
                bm25=settings.bm25,
                device=settings.embedding.device,
                runtime=settings.embedding.runtime,
                threads=settings.embedding.threads,
            ),
        )
        builder = IndexBuilder(
            self.store,
            self.embedder,
            index_config,
            chunking=settings.chunking,
            keep_versions=settings.paths.keep_versions,
        )
        self.ingestor = Ingestor(
            self.store,
            self.embedder,
            builder,
            IngestSettings(
                settings.loading,
                settings.archive,
                settings.chunking,
                settings.dedupe,
                batch_chunks=settings.ingest.batch_chunks,
                data_dir=settings.data_dir,
                convert=settings.convert,
                bm25_first=settings.ingest.publish_bm25_first,
                bm25_first_min_bytes=settings.ingest.bm25_first_min_bytes,
                bm25_first_min_seconds=settings.ingest.bm25_first_min_seconds,
                fill=FillSettings(settings.ingest.batch_chunks, settings.ingest.publish_every_seconds),
                tokenize_ahead=settings.ingest.tokenize_ahead,
                protected_folders=(settings.indices_dir, settings.logs_dir),
                protected_files=(settings.store_path, keys_file_path(settings)),
            ),
        )
        self.context_builder = ContextBuilder(
            settings.context,
            cached_embed(self.embedder, self.store),
            self.generator,
            encoding=settings.chunking.encoding,
            cosines=lambda: cosine_range(self.embedder.model_name),
        )
        self.querylog = QueryLog.in_dir(settings.logs_dir)
        self.freshness = Freshness()  # stale citations: files changed on disk since indexed

    @classmethod
    def open(
        cls, data_dir: str | os.PathLike[str] | None = None, *, config: str | os.PathLike[str] | None = None
    ) -> Engine:
        """An engine over ``data_dir`` with the CLI's defaults: ``config`` or ``HYBRID_RAG_CONFIG``,
        then ``HYBRID_RAG_*`` overrides; ``data_dir`` or ``HYBRID_RAG_HOME`` or ``./data``."""
        return cls(load_settings(config, data_dir=data_dir))

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

    def rebuild(self, *, progress: Callable[[int], None] | None = None) -> BuildReport:
        """Rebuild both indices from the store into a new version, validate it, swap it in."""
        with self.writer.hold("rebuild"):
            if self.store.exists:
                self.ingestor.revive()  # a write killed before it did (dropped near-duplicates)
            if not self.store.exists or self.store.chunk_count() == 0:
                raise NoIndexError("nothing to rebuild: the store is empty; run `hybrid-rag ingest PATH`")
            return self.ingestor.builder.build(full=True, reason="rebuild", progress=progress)

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
                }
            )
        return rows

    def query(self, text: str, *, log: bool = False, **kwargs: Any) -> QueryResult:
        """``HybridRetriever.query``; ``log=True`` (as the CLI does) appends a line to logs/queries.jsonl.

        The self-check runs here only when the call asks for it (``features={"self_check": True}``,
        ``query --self-check``), not from ``features.self_check``: a retry costs whole retrievals,
        and a raw query has no context to protect. The result is then the kept attempt's."""
        self_check = bool((kwargs.get("features") or {}).get("self_check"))
        return self.retrieve(text, self_check=self_check, log=log, **kwargs)[0]

    def self_check(self, text: str, *, log: bool = False, **kwargs: Any) -> Checked:
        """Retrieve with the self-check's retries (``context.confidence_threshold``, ``max_retries``),
        every attempt judged against ``text`` by the live dense index; ``kwargs`` as for ``query``."""
        checked = self.retrieve(text, self_check=True, log=log, **kwargs)[1]
        assert checked is not None
        return checked

    def retrieve(
        self, text: str, *, self_check: bool, log: bool = False, **kwargs: Any
    ) -> tuple[QueryResult, Checked | None]:
        """The one place that decides whether a retrieval runs through the self-check: the result
        (the kept attempt's, when it did) and the self-check's record (None when it did not).
        Paths are shown relative to the ingested root (``hybrid_rag/paths.py``) unless
        ``absolute_paths=True``."""
        root = None if kwargs.pop("absolute_paths", False) else self.ingested_root()
        lang = kwargs.pop("lang", None)
        with language_override(lang):
            behind = self.behind_note()

            def run(q: str) -> QueryResult:
                found = mark_stale(self.retriever.query(q, **kwargs), self.store, self.freshness)
                result = with_language(shown_result(found, root), text)
                return with_note(result, behind) if behind else result

            if not self_check:
                result = run(text)
                if log:
                    self.querylog.append(make_record(text, result))
                return result, None
            relevance = self.retriever.dense_scores
            cosines = cosine_range(self.embedder.model_name)
            check = SelfCheck(
                self.settings.context, run, self.generator, relevance=relevance, cosines=cosines
            )
            checked = check.run(text)
        if log:
            self.querylog.append(make_record(text, checked.result, checked=checked))
        return checked.result, checked

    def context(
        self, text: str, *, max_tokens: int | None = None, log: bool = False, **kwargs: Any
    ) -> tuple[Context, Checked | None]:
        """Retrieve (with the self-check's retries when ``features.self_check``), then build the
        token-budgeted, cited context, whose confidence is the self-check's verdict when it ran.
        ``kwargs`` go to ``query`` (top_k, filters, mode, features). ``context.result`` is the kept
        result with the context's stages in its trace; ``log=True`` logs that."""
        flags = resolve_flags(self.settings.features, kwargs.get("features"))
        with language_override(kwargs.get("lang")):  # the context reads the question in it too
            result, checked = self.retrieve(text, self_check=flags.self_check, **kwargs)
            fragments = fragment_cuts(self.store, result.chunks)
            context = self.context_builder.build(
                text, result, max_tokens=max_tokens, checked=checked, fragments=fragments
            )
        if log:
            self.querylog.append(make_record(text, context.result, checked=checked, context=context))
        return context, checked

    def ask(
        self,
        text: str,
        *,
        max_tokens: int | None = None,
        answer_tokens: int = 512,
        log: bool = False,
        **kwargs: Any,
    ) -> Answer:
        """The cited context for ``text`` and, with a generator configured, its answer."""
        context, checked = self.context(text, max_tokens=max_tokens, **kwargs)
        with language_override(kwargs.get("lang")):  # the prompt asks for an answer in it
            return self.answer(text, context, checked, answer_tokens=answer_tokens, log=log)

    def answer(
        self,
        text: str,
        context: Context,
        checked: Checked | None = None,
        *,
        answer_tokens: int = 512,
        log: bool = False,
    ) -> Answer:
        """Send a built context to the generator (when there is one). A generator that fails
        leaves the Answer's ``error`` set and its context intact: never an exception here."""
        system, prompt = build_prompt(text, context, self.settings.context, lang=query_language(text).code)
        answer, error, timings = None, None, {}
        if self.generator is not None:
            start = time.perf_counter()
            try:
                answer = self.generator.generate(prompt, system=system, max_tokens=answer_tokens)
            except RemoteServiceError as exc:
                error = str(exc)
            except Exception as exc:  # a pluggable Generator: whatever it raises is its failure
                error = f"the generator failed: {describe(exc)}"
            timings["generate"] = (time.perf_counter() - start) * 1000
        if log:
            record = make_record(text, context.result, checked=checked, context=context, timings_ms=timings)
            if error is not None:
                record["notes"].append(f"answer generator failed: {error}")
            self.querylog.append(record)
        return Answer(text, context, checked, system, prompt, answer, error)

    def symbols(
        self,
        name: str,
        *,
        mode: str | None = None,
        kinds: Sequence[str] | None = None,
        path: str | None = None,
        limit: int = 20,
        absolute_paths: bool = False,
    ) -> list[SymbolMatch]:
        """Definitions named ``name`` in the served index version: exact, then prefix matches, fuzzy
        ones when there are neither (``mode`` picks one kind), of ``kinds``, under a ``path`` glob
        (``src/**``, shown or stored); each cites ``path:start-end`` (``hybrid_rag/symbols``)."""
        self._require_store()
        root = self.ingested_root()
        glob = path.removeprefix("./") if path else None
        state = served_state(self.index_config)
        found = find_symbols(
            self.store, name, mode=mode, kinds=kinds, path_glob=glob, state=state, limit=limit
        )
        return shown_matches(found, None if absolute_paths else root)

    def outline(self, path: str, *, absolute_paths: bool = False) -> list[OutlineEntry]:
        """A file's definitions in order, nested (``depth``), in the served index version; ``path``
        as shown (relative to the ingested root), stored, or relative to the working directory.
        InputError when no stored document has that path."""
        self._require_store()
        root = self.ingested_root()
        stored = resolve_path(path, self.store.document_hashes(), root)
        if stored is None:
            shown = "paths as `hybrid-rag documents` shows them"
            raise InputError(f"no document {path!r} in the store ({shown})")
        symbols = self.store.symbols(path=stored, state=served_state(self.index_config))
        return shown_outline(symbol_outline(symbols), None if absolute_paths else root)

    def references(
        self, question: str, name: str, *, depth: int = 1, absolute_paths: bool = False
    ) -> dict[str, Any]:
        """``question`` about ``name`` in the served index version, answered as JSON with every
        definition cited ``path:start-end`` (``hybrid_rag/symbols/questions.py``): ``refs`` (every
        use, by file), ``callers``, ``callees`` (``depth`` levels) or ``impact`` (``name`` a file
        as shown or stored, or a definition's name: the definitions and files depending on it)."""
        from hybrid_rag.symbols import questions as graph

        self._require_store()
        root = self.ingested_root()
        state = served_state(self.index_config)
        shown = None if absolute_paths else root
        if question == "refs":
            answer = graph.refs_answer(self.store, name, state=state, root=shown)
        elif question == "callers":
            answer = graph.callers_answer(self.store, name, state=state, depth=depth, root=shown)
        elif question == "callees":
            answer = graph.callees_answer(self.store, name, state=state, depth=depth, root=shown)
        elif question == "impact":
            path = resolve_path(name, self.store.document_hashes(), root)
            answer = graph.impact_answer(self.store, name, state=state, path=path, depth=depth, root=shown)
        else:
            raise InputError(f"unknown question {question!r}: refs, callers, callees or impact")
        return answer

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
        if absolute_paths or not root:
            return found
        return dataclasses.replace(
            found,
            changed=tuple(display_path(p, root) for p in found.changed),
            new=tuple(display_path(p, root) for p in found.new),
            deleted=tuple(display_path(p, root) for p in found.deleted),
        )

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
        )

    def close(self) -> None:
        self.store.close()


def with_language(result: QueryResult, question: str) -> QueryResult:
    """``result`` with the language the question was read in (``--lang``, else detected)."""
    return dataclasses.replace(result, lang=query_language(question).code)


def with_note(result: QueryResult, note: str) -> QueryResult:
    """``result`` with one more note in its trace."""
    return dataclasses.replace(
        result, trace=dataclasses.replace(result.trace, notes=(*result.trace.notes, note))
    )


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


class HybridRetriever(Pipeline):
    """The query pipeline as the package exports it, with ``open``: the composition root (this
    module) builds every stage, so the pipeline itself never imports it.

    >>> HybridRetriever.open("data").query("how are ties broken?", top_k=3)  # doctest: +SKIP

    Opened, it shows paths as every other surface does (``hybrid_rag/paths.py``): relative to the
    ingested root, or as stored with ``query(..., absolute_paths=True)``. The Engine's own
    retriever answers stored paths (the Engine shows them).
    """

    shown_root: Callable[[], str | None] | None = None  # set by ``open``: the ingested root, looked up
    freshness: Freshness | None = None  # set by ``open``: stale citations marked (``ingest/freshness.py``)

    @classmethod
    def open(
        cls, data_dir: str | os.PathLike[str] | None = None, *, config: str | os.PathLike[str] | None = None
    ) -> HybridRetriever:
        """A ready retriever over an existing data dir, with the CLI's defaults (``data_dir``:
        ``HYBRID_RAG_HOME`` or ``./data``; ``config``: ``HYBRID_RAG_CONFIG`` or the defaults)."""
        engine = Engine.open(data_dir, config=config)
        retriever = engine.retriever
        retriever.shown_root = engine.ingested_root
        retriever.freshness = engine.freshness
        return retriever

    def query(
        self,
        text: str,
        top_k: int | None = None,
        filters: object = None,
        mode: str | None = None,
        features: Mapping[str, bool] | None = None,
        *,
        absolute_paths: bool = False,
    ) -> QueryResult:
        """``Pipeline.query``, its paths shown relative to the ingested root when opened (class docstring)."""
        result = super().query(text, top_k, filters, mode, features)
        if self.freshness is not None:
            result = mark_stale(result, self.store, self.freshness)
        if self.shown_root is None or absolute_paths:
            return result
        return shown_result(result, self.shown_root())
