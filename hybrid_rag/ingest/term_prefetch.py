"""BM25 terms computed in other processes while a BM25-first ingest is still storing its files.

A BM25-first ingest (``ingest/fill.py``) answers its first question once every file is stored and
a BM25-only version is built, and that build tokenises every chunk (spaCy's rules, each language's
analyzer): on Django's 15,286 chunks more time than reading, chunking and storing them took, all
on one core while the other idled. ``TermPrefetch`` hands each batch of stored chunks to worker
processes as the ingest goes, and writes their terms into the store's token cache
(``MetadataStore.put_tokens``, keyed as ``indices/chunk_terms.chunk_terms`` reads them), so the build
finds them there instead of tokenising.

The terms are exactly the build's: the workers build the same ``Tokenizer`` (from the same
``bm25`` settings) and read a chunk in the language ingest decided and the store records for it
(``ingest/languages.py``: ``analysis_lang``, as ``analysis_language`` reads the stored chunk).
The cache is only a shortcut: a worker that fails, a batch not finished when the ingest stops, or
a kill loses no data; the build tokenises whatever it does not find.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING

from hybrid_rag.indices.chunk_terms import terms_cache_key
from hybrid_rag.lang.tokenize import Tokenizer

if TYPE_CHECKING:
    from hybrid_rag.settings import BM25Settings
    from hybrid_rag.store import MetadataStore

log = logging.getLogger(__name__)

BATCH = 256  # chunks a job; the pool starts with the first full batch (a small ingest never starts it)
MAX_WORKERS = 2  # the ingest process itself is busy reading and storing; more workers wait on it
PARENT_POLL_SECONDS = 1.0  # a worker looks this often whether its ingest process is still there

Item = tuple[str, str, str]  # (sha256, text, the language it is read in: ``ingest/languages.analysis_lang``)


def prefetch_workers(cores: int | None = None) -> int:
    """Worker processes beside the ingest: the cores it leaves, at most :data:`MAX_WORKERS`; 0 on
    one core (a worker would only take turns with the ingest)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(0, min(MAX_WORKERS, cores - 1))


_TOKENIZER: Tokenizer | None = None  # a worker's, built once when it starts (``_start``)


def _start(parent: int, bm25: BM25Settings) -> None:
    """A worker's initializer: the index's tokenizer, and an exit when its ingest is gone."""
    global _TOKENIZER
    _TOKENIZER = Tokenizer.for_settings(bm25)
    _exit_with(parent)


def _exit_with(parent: int) -> None:
    """In a worker, at its start: exit when the ingest process is gone (a kill -9 leaves no
    worker behind, waiting on a queue whose other end it holds itself)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-the-ingest", daemon=True).start()


def _terms(items: Sequence[Item]) -> list[tuple[str, str | None, list[str]]]:
    """In a worker: each item's (sha256, language read in or None, terms)."""
    tokenizer = _TOKENIZER
    if tokenizer is None:
        raise RuntimeError("a term worker starts with term_prefetch._start")
    texts = [text for _, text, _ in items]
    if not tokenizer.languages:
        plain = tokenizer.tokenize_many(texts)
        return [(sha, None, terms) for (sha, _, _), terms in zip(items, plain, strict=True)]
    langs = [lang for _, _, lang in items]  # decided at ingest, stored with the chunk: not detected again
    terms = tokenizer.tokenize_many(texts, langs)
    return [(sha, lang, t) for (sha, _, _), lang, t in zip(items, langs, terms, strict=True)]


class TermPrefetch:
    """Terms of the chunks ``add``-ed, tokenised in ``workers`` processes by the tokenizer ``bm25``
    configures (the index build's) and cached in ``store``."""

    def __init__(
        self, store: MetadataStore, bm25: BM25Settings, *, workers: int, batch: int | None = None
    ) -> None:
        self.store = store
        self.bm25 = bm25
        self.key = Tokenizer.for_settings(bm25).cache_key()  # the workers build their own tokenizer
        self.workers = workers
        self.batch = batch or BATCH
        self._items: list[Item] = []
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[list[tuple[str, str | None, list[str]]]]] = []
        self.cached = 0  # chunks whose terms were written to the cache
        self.failed = False

    def add(self, items: Sequence[Item]) -> None:
        """Queue chunks (sha256, text, language read in); a full batch goes to a worker; finished
        ones are cached."""
        if self.failed or self.workers < 1:
            return
        self._items.extend(items)
        while len(self._items) >= self.batch:
            self._submit(self._items[: self.batch])
            self._items = self._items[self.batch :]
        self._collect(wait=False)

    def finish(self) -> None:
        """Wait for every batch (the rest submitted first) and cache their terms; then stop the pool."""
        try:
            if self._items and self._pool is not None and not self.failed:
                self._submit(self._items)  # a small rest without a pool is left to the build
            self._items = []
            self._collect(wait=True)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the workers without waiting for their batches (an interrupted ingest)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._futures = []

    def _submit(self, items: Sequence[Item]) -> None:
        try:
            if self._pool is None:
                spawn = multiprocessing.get_context("spawn")  # no fork of a process with threads
                self._pool = ProcessPoolExecutor(
                    self.workers, mp_context=spawn, initializer=_start, initargs=(os.getpid(), self.bm25)
                )
            self._futures.append(self._pool.submit(_terms, list(items)))
        except Exception as exc:  # no processes here (a sandbox, a limit): the build tokenises
            self._give_up(exc)

    def _collect(self, *, wait: bool) -> None:
        pending = []
        for future in self._futures:
            if not wait and not future.done():
                pending.append(future)
                continue
            try:
                found = future.result()
            except Exception as exc:
                self._give_up(exc)
                return
            by_key: dict[str, dict[str, list[str]]] = {}
            for sha, lang, terms in found:
                by_key.setdefault(terms_cache_key(self.key, lang), {})[sha] = terms
            for key, tokens in by_key.items():
                self.store.put_tokens(key, tokens)
            self.cached += len(found)
        self._futures = pending

    def _give_up(self, exc: BaseException) -> None:
        log.warning("BM25 terms not prefetched (the index build tokenises them): %s", exc)
        self.failed = True
        self.close()
