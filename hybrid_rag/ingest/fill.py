"""The embedding after a BM25-first ingest: the stored chunks' missing vectors, filled in batches.

With ``ingest.publish_bm25_first`` the ingest stores every file's chunks without embedding them
(``stream.BatchWriter`` with ``embed=False``), so that a version can go live at once with BM25 over
every chunk (``indices/coverage.py``). ``DenseFill`` then embeds the texts that have no cached
vector, ``batch_chunks`` at a time (the implementation's first: ``embed_order.py``), each batch
committed to the embedding cache before the next; every ``publish_every_seconds`` a partial
version with the vectors so far goes live, and the caller builds the complete one at the end. A
kill loses at most the batch being embedded: the store holds the chunks, the cache the vectors,
and the next ingest (even one with nothing new to read) finds the live version partial and
carries on here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hybrid_rag.indices.build import BuildReport, IndexBuilder
from hybrid_rag.ingest.embed_order import ordered_todo
from hybrid_rag.protocols import Embedder
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.embedding_cache import embed_missing

Progress = Callable[[str, int, int], None]  # as pipeline.Progress: "embed" and "searchable" here


@dataclass(frozen=True)
class FillSettings:
    batch_chunks: int = 64
    publish_every_seconds: float = 120.0  # 0: no intermediate versions
    # by the role of the chunk's file (``embed_order.py``): what is embedded first, and never
    embed_order: tuple[str, ...] = ("source",)
    embed_never: tuple[str, ...] = ()


@dataclass
class FillReport:
    embedded: int = 0
    never: dict[str, int] = field(default_factory=dict)  # role -> texts ``embed_never`` left out
    first: BuildReport | None = None  # the BM25-only version, when one went live
    last: BuildReport | None = None  # the newest version this fill made live
    partials: int = 0  # versions published while embedding (the first one included)
    interrupted: bool = False


def missing_texts(store: MetadataStore, model: str) -> dict[str, int]:
    """The live chunks' texts without a cached vector for ``model``: sha256 -> one chunk id holding
    it, in chunk id order (the text is read batch by batch when it is embedded)."""
    first: dict[str, int] = {}
    for chunk_id, sha in store.chunk_hashes().items():
        first.setdefault(sha, chunk_id)
    cached = store.cached_shas(model, first)
    return {sha: chunk_id for sha, chunk_id in first.items() if sha not in cached}


class DenseFill:
    """Embeds the missing vectors of the stored chunks, publishing partial versions on the way."""

    def __init__(
        self,
        store: MetadataStore,
        embedder: Embedder,
        builder: IndexBuilder,
        settings: FillSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.builder = builder
        self.settings = settings
        self.clock = clock

    def run(
        self,
        seconds: dict[str, float],
        progress: Progress | None = None,
        stop: Callable[[], bool] = lambda: False,
        *,
        first: bool = True,
    ) -> FillReport:
        """Embed what is missing; ``first``: a BM25-only version goes live before anything is
        embedded (a re-run after a kill has one live already)."""
        report = FillReport()
        missing = missing_texts(self.store, self.embedder.model_name)
        # the implementation first, tests and vendored files after; ``embed_never``'s roles not at all
        pending, report.never = ordered_todo(
            self.store, missing, self.settings.embed_order, self.settings.embed_never
        )
        publish = self.builder.builds_partial and bool(pending)
        if publish and first:
            report.first = report.last = self._publish(seconds, progress)
            report.partials += 1
        last = self.clock()
        batch = self.settings.batch_chunks
        for start in range(0, len(pending), batch):
            if stop():
                report.interrupted = True
                return report
            part = pending[start : start + batch]
            t = time.perf_counter()
            rows = self.store.chunks([chunk_id for _, chunk_id in part])
            # a chunk gone since is skipped; each batch is cached as soon as it is embedded
            texts = {sha: rows[chunk_id].text for sha, chunk_id in part if chunk_id in rows}
            _, embedded = embed_missing(self.store, self.embedder, texts, batch_size=batch, keep=True)
            seconds["embed"] = seconds.get("embed", 0.0) + time.perf_counter() - t
            report.embedded += embedded
            if progress:
                progress("embed", start + len(part), len(pending))
            every = self.settings.publish_every_seconds
            more = start + batch < len(pending)
            if publish and every > 0 and more and self.clock() - last >= every:
                report.last = self._publish(seconds, progress)
                report.partials += 1
                last = self.clock()
        return report

    def _publish(self, seconds: dict[str, float], progress: Progress | None) -> BuildReport:
        t = time.perf_counter()
        build = self.builder.build(reason="ingest: searchable before the vectors are in", embed=False)
        seconds["publish"] = seconds.get("publish", 0.0) + time.perf_counter() - t
        if progress:
            manifest = self.builder.versions.manifest(build.version)
            progress("searchable", int(manifest.get("dense_chunks", 0)), build.chunks)
        return build
