"""The composition root: every stage built from one Settings, each constructor cheap (STYLE 8)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_rag.context import Context, ContextBuilder, cached_embed, fragment_cuts
from hybrid_rag.embedders import make_embedder
from hybrid_rag.errors import NoIndexError
from hybrid_rag.generation import make_generator
from hybrid_rag.indices.build import BuildReport
from hybrid_rag.indices.live import LiveIndexProvider
from hybrid_rag.indices.versions import INDEX_NAME, IndexVersions
from hybrid_rag.ingest.pipeline import Ingestor, IngestReport
from hybrid_rag.protocols import Embedder
from hybrid_rag.querylog import QueryLog, make_record
from hybrid_rag.retrieval.expansion import QueryExpander
from hybrid_rag.retrieval.rerank import make_reranker
from hybrid_rag.retrieval.retriever import HybridRetriever, resolve_flags
from hybrid_rag.retrieval.selfcheck import Checked, SelfCheck
from hybrid_rag.settings import Settings
from hybrid_rag.store import MetadataStore
from hybrid_rag.types import QueryResult


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "data_dir": self.data_dir,
            "model": self.model,
            "documents": self.documents,
            "chunks": self.chunks,
            "cached_embeddings": self.cached_embeddings,
            "live_version": self.live_version,
            "versions": list(self.versions),
            "bytes_on_disk": dict(self.bytes_on_disk),
        }


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


class Engine:
    """Store, embedder, indices, retriever and ingestor for one data directory."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.store = MetadataStore(settings.store_path)
        self.embedder = embedder if embedder is not None else make_embedder(settings.embedding)
        self.indices = LiveIndexProvider(settings, self.embedder)
        self.generator = make_generator(settings.generator)
        self.retriever = HybridRetriever(
            settings,
            self.store,
            self.embedder,
            self.indices,
            expander=QueryExpander(settings, self.embedder, self.generator),
            reranker=make_reranker(settings, self.embedder),
        )
        self.ingestor = Ingestor(self.store, self.embedder, settings)
        self.context_builder = ContextBuilder(
            settings, cached_embed(self.embedder, self.store), self.generator
        )
        self.querylog = QueryLog.for_settings(settings)

    def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        collection: str = "default",
        dry_run: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> IngestReport:
        return self.ingestor.ingest_paths(paths, collection=collection, dry_run=dry_run, progress=progress)

    def rebuild(self, *, progress: Callable[[int], None] | None = None) -> BuildReport:
        """Rebuild both indices from the store into a new version, validate it, swap it in."""
        if not self.store.exists or self.store.chunk_count() == 0:
            raise NoIndexError("nothing to rebuild: the store is empty; run `hybrid-rag ingest PATH`")
        return self.ingestor.builder.build(full=True, reason="rebuild", progress=progress)

    def rollback(self, version: int) -> None:
        """Point the live index at an older version still on disk (the next ingest catches it up)."""
        versions = IndexVersions(self.settings.indices_dir)
        manifest = versions.manifest(version) if versions.directory(version).is_dir() else None
        if manifest is None:
            on_disk = ", ".join(f"v{v}" for v in versions.versions()) or "none"
            raise NoIndexError(f"index version {version} is not on disk (on disk: {on_disk})")
        versions.set_current(version)
        self.store.record_index_version(
            INDEX_NAME, version, manifest.get("source_hash", ""), manifest.get("params", {}), "rolled back to"
        )

    def query(self, text: str, *, log: bool = False, **kwargs: Any) -> QueryResult:
        """``HybridRetriever.query``; ``log=True`` (as the CLI does) appends a line to logs/queries.jsonl.

        The self-check runs here only when the call asks for it (``features={"self_check": True}``,
        ``query --self-check``), not from ``features.self_check``: a retry costs whole retrievals,
        and a raw query has no context to protect. The result is then the kept attempt's."""
        if (kwargs.get("features") or {}).get("self_check"):
            return self.self_check(text, log=log, **kwargs).result
        result = self.retriever.query(text, **kwargs)
        if log:
            self.querylog.append(make_record(text, result))
        return result

    def self_check(self, text: str, *, log: bool = False, **kwargs: Any) -> Checked:
        """Retrieve with the self-check's retries (``context.confidence_threshold``, ``max_retries``),
        every attempt judged against ``text`` by the live dense index; ``kwargs`` as for ``query``."""
        check = SelfCheck(
            self.settings,
            lambda q: self.retriever.query(q, **kwargs),
            self.generator,
            relevance=self.retriever.dense_scores,
        )
        checked = check.run(text)
        if log:
            self.querylog.append(make_record(text, checked.result, checked=checked))
        return checked

    def context(
        self, text: str, *, max_tokens: int | None = None, log: bool = False, **kwargs: Any
    ) -> tuple[Context, Checked | None]:
        """Retrieve (with the self-check's retries when ``features.self_check``), then build the
        token-budgeted, cited context, whose confidence is the self-check's verdict when it ran.
        ``kwargs`` go to ``query`` (top_k, filters, mode, features). ``context.result`` is the kept
        result with the context's stages in its trace; ``log=True`` logs that."""
        flags = resolve_flags(self.settings.features, kwargs.get("features"))
        checked = self.self_check(text, **kwargs) if flags.self_check else None
        result = checked.result if checked is not None else self.retriever.query(text, **kwargs)
        fragments = fragment_cuts(self.store, result.chunks)
        context = self.context_builder.build(
            text, result, max_tokens=max_tokens, checked=checked, fragments=fragments
        )
        if log:
            self.querylog.append(make_record(text, context.result, checked=checked, context=context))
        return context, checked

    def stats(self) -> Stats:
        versions = IndexVersions(self.settings.indices_dir)
        counts = (
            self.store.counts()
            if self.store.exists
            else {"documents": 0, "chunks": 0, "cached_embeddings": 0}
        )
        records = self.store.index_versions() if self.store.exists else []
        on_disk = {v: versions.directory(v) for v in versions.versions()}
        sizes = {
            "store": sum(
                _tree_size(p) for p in self.settings.data_dir.glob(self.settings.paths.store_file + "*")
            )
        }
        sizes.update({f"v{v}": _tree_size(p) for v, p in on_disk.items()})
        return Stats(
            data_dir=str(self.settings.data_dir),
            model=self.embedder.model_name,
            documents=counts["documents"],
            chunks=counts["chunks"],
            cached_embeddings=counts["cached_embeddings"],
            live_version=versions.current(),
            versions=tuple(
                {
                    "version": r.version,
                    "built_at": r.built_at.isoformat(),
                    "status": r.status,
                    "on_disk": r.version in on_disk,
                    "source_hash": r.source_hash[:12],
                }
                for r in records
            ),
            bytes_on_disk=sizes,
        )

    def close(self) -> None:
        self.store.close()
