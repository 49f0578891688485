"""Streaming writes: chunked files go to the store in bounded batches, each committed before the next.

``BatchWriter`` takes files one at a time, already chunked and deduplicated. The chunk texts not in
the embedding cache queue up; every ``batch_chunks`` of them are embedded and committed in one
transaction together with every queued file whose texts are now all embedded (its document row,
its chunks and its hash change together: a file is in the store whole, or as it was before). So
at most one batch of window vectors is in memory, and a process killed at any moment has lost at
most the batch it was embedding: a re-run finds the committed files unchanged and the committed
vectors in the cache. A file longer than a batch has its vectors committed batch by batch and its
rows with the batch that embeds its last chunk.

With ``embed=False`` (the BM25-first ingest, ``fill.py``) nothing is embedded here: files are
committed ``batch_chunks`` chunks at a time with the vectors the cache already has, and
``fill.DenseFill`` embeds the rest once every file is stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hybrid_rag.protocols import Embedder
from hybrid_rag.store import FileChunks, MetadataStore
from hybrid_rag.store.embedding_cache import embed_windows


@dataclass
class WriteCounts:
    """Running totals of one ingest's writes (mutable: the writer adds to them as it commits)."""

    files_written: int = 0
    chunks_written: int = 0
    embedded: int = 0  # texts embedded by this ingest
    reused: int = 0  # chunks whose vectors were already in the cache


class BatchWriter:
    """Embeds and commits queued files a batch at a time (see the module docstring).

    ``seconds`` gets the time spent in ``embed`` and ``store``; ``on_commit`` is called after each
    commit (progress).
    """

    def __init__(
        self,
        store: MetadataStore,
        embedder: Embedder,
        *,
        collection: str,
        batch_chunks: int,
        seconds: dict[str, float],
        on_commit: Callable[[WriteCounts], None] | None = None,
        stop: Callable[[], bool] = lambda: False,
        embed: bool = True,
    ) -> None:
        if batch_chunks <= 0:
            raise ValueError(f"batch_chunks must be positive, got {batch_chunks}")
        self.store = store
        self.embedder = embedder
        self.collection = collection
        self.batch_chunks = batch_chunks
        self.seconds = seconds
        self.on_commit = on_commit
        self._stop = stop  # asked between batches: a long file stops at a batch boundary too
        self.embed = embed  # False: store the chunks now, embed them later (fill.py)
        self.counts = WriteCounts()
        self._files: list[FileChunks] = []  # chunked, waiting for their texts to be embedded
        self._todo: dict[str, str] = {}  # sha256 -> text not in the cache, in the order of _files
        self._queued = 0  # chunks of the files in _files
        self._unchecked: list[FileChunks] = []  # added, not yet looked up in the cache
        self._unchecked_chunks = 0

    @property
    def pending_texts(self) -> int:
        return len(self._todo)

    def add(self, fc: FileChunks) -> None:
        """Queue one file; embeds and commits every full batch this completes."""
        self._unchecked.append(fc)
        self._unchecked_chunks += len(fc.kept)
        if self._unchecked_chunks < self.batch_chunks:
            return
        self._check()
        if len(self._todo) >= self.batch_chunks:
            while len(self._todo) >= self.batch_chunks and not self._stop():
                self._commit(self.batch_chunks)
        elif self._queued >= self.batch_chunks:  # mostly cached files: a short batch, not a long queue
            self._commit(len(self._todo))

    def finish(self, delete_paths: Sequence[str] = ()) -> None:
        """Embed and commit everything queued; ``delete_paths`` leave the store in the last commit."""
        self._check()
        while len(self._todo) > self.batch_chunks:
            self._commit(self.batch_chunks)
        self._commit(len(self._todo), delete_paths)

    def stop(self) -> None:
        """Commit the queued files whose vectors are all cached, embed nothing more (an interrupt)."""
        self._check()
        self._commit(0)

    def _check(self) -> None:
        """Look the added files' texts up in the cache (one query a batch) and queue them."""
        shas = {sp.sha256 for fc in self._unchecked for sp in fc.kept} - self._todo.keys()
        cached = self.store.cached_shas(self.embedder.model_name, shas) if shas else set()
        for fc in self._unchecked:
            for sp in fc.kept:
                if sp.sha256 in cached:
                    self.counts.reused += 1
                elif self.embed and sp.sha256 not in self._todo:
                    self._todo[sp.sha256] = sp.text
            self._files.append(fc)
            self._queued += len(fc.kept)
        self._unchecked, self._unchecked_chunks = [], 0

    def _commit(self, n: int, delete_paths: Sequence[str] = ()) -> None:
        shas = list(self._todo)[:n]
        fresh = {}
        if shas:
            t = time.perf_counter()
            vectors = embed_windows(self.embedder, [self._todo[sha] for sha in shas])
            fresh = dict(zip(shas, vectors, strict=True))
            self.seconds["embed"] = self.seconds.get("embed", 0.0) + time.perf_counter() - t
            for sha in shas:
                del self._todo[sha]
        done = 0  # the queued files, in order, whose texts are all embedded now
        while done < len(self._files) and not any(sp.sha256 in self._todo for sp in self._files[done].kept):
            done += 1
        files, self._files = self._files[:done], self._files[done:]
        self._queued -= sum(len(fc.kept) for fc in files)
        if not (files or fresh or delete_paths):
            return
        t = time.perf_counter()
        ids = self.store.write_files(
            files,
            collection=self.collection,
            delete_paths=delete_paths,
            embeddings=fresh,
            model=self.embedder.model_name,
        )
        self.seconds["store"] = self.seconds.get("store", 0.0) + time.perf_counter() - t
        self.counts.files_written += len(files)
        self.counts.chunks_written += len(ids)
        self.counts.embedded += len(fresh)
        if self.on_commit is not None:
            self.on_commit(self.counts)
