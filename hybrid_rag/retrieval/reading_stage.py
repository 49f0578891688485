"""Which stages read a question, and which vector set answers it: the retriever's reading stage.

``HybridRetriever`` takes these methods as a mixin (``retrieval/retriever.py``); the rules are in
``retrieval/reading.py`` (a stage that cannot read the question gets no vote) and
``retrieval/second_set.py`` (a question only the second vector set's model reads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from hybrid_rag.errors import RemoteServiceError
from hybrid_rag.indices.live import LiveIndex, LiveIndexProvider
from hybrid_rag.lang.query import Asked, index_reading
from hybrid_rag.protocols import Embedder
from hybrid_rag.retrieval.candidates import RetrievalMode
from hybrid_rag.retrieval.question_terms import bm25_terms
from hybrid_rag.retrieval.reading import QUERY_LANGUAGE_MIN_SHARE, Reading, read_question
from hybrid_rag.retrieval.second_set import with_second_set
from hybrid_rag.settings import FeatureFlags, RetrievalSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.types import Tracer


class ReadingStage:
    """The reading of a question against the live index (a mixin of ``HybridRetriever``)."""

    store: MetadataStore
    embedder: Embedder
    indices: LiveIndexProvider
    retrieval: RetrievalSettings
    features: FeatureFlags
    second_embedders: Callable[[str], Embedder] | None
    _languages: tuple[int, dict[str, int]] | None

    def dense_scores(self, text: str, ids: Sequence[int]) -> np.ndarray:
        """Cosines of chunks ``ids`` to ``text`` in the live dense index, as its search scores
        them (NaN for an id it lacks); the second vector set's for a question only it reads."""
        live, embedder = self.answering_set(text)
        try:
            vector = embedder.embed_queries([text])[0]
        except RemoteServiceError:  # no query vector: no dense evidence, as for an absent id
            return np.full(len(ids), np.nan)
        return live.dense.score(vector, np.asarray(ids, dtype=np.int64))

    def reading(
        self,
        text: str,
        mode: RetrievalMode,
        flags: FeatureFlags,
        live: LiveIndex,
        tracer: Tracer,
        asked: Asked | None = None,
    ) -> Reading:
        """Whether each stage reads the question (``retrieval/reading.py``): a stage that cannot,
        beside one that can, gets no vote; when neither can, ``tracer.unread`` says what the index
        lacks and how to fix it; a question only the second vector set's model reads is read with
        it (``retrieval/second_set.py``, ``Reading.vectors``). Said in the trace. ``asked``: its
        language (None: detected)."""
        counts = self.language_counts(live.version)
        asked = asked if asked is not None else Asked.of(text)
        code = asked.code_of(text)
        # a short Han question read as ja/wuu/und over a Chinese index is Chinese (lang/query.py)
        lang = index_reading(text, code, counts, QUERY_LANGUAGE_MIN_SHARE, given=asked.given)

        def read(model: str) -> Reading:
            return read_question(
                lang,
                model,
                counts,
                # asked only when needed (not every index has it); the terms BM25's search reads
                lambda: live.bm25.held_terms(text, code, bm25_terms(live.bm25, asked, text)),
                mode=mode.value,
                dense_on=flags.dense,
                bm25_on=flags.bm25,
                unread_dense_scale=self.retrieval.unread_language_dense_scale,
                cross_bm25_scale=self.retrieval.cross_language_bm25_scale,
                text=text,
            )

        reading = read(self.embedder.model_name)
        if live.second is not None and self.second_embedders is not None:
            searched = flags.dense and mode in (RetrievalMode.DENSE, RetrievalMode.HYBRID)
            first, second = self.embedder.model_name, live.second.model
            reading = with_second_set(reading, lang, text, first, second, read, dense_searched=searched)
        for note in reading.notes:
            tracer.note(note)
        tracer.unread = reading.unread
        tracer.vectors = reading.vectors
        return reading

    def answering_set(self, text: str, asked: Asked | None = None) -> tuple[LiveIndex, Embedder]:
        """The live index and query embedder that answer ``text`` in a hybrid query (``vector_set``);
        ``asked``: its language (None: detected)."""
        live = self.indices.get()
        if live.second is None:  # one set: nothing to read
            return live, self.embedder
        reading = self.reading(text, RetrievalMode.HYBRID, self.features, live, Tracer(), asked)
        return self.vector_set(live, reading)

    def vector_set(self, live: LiveIndex, reading: Reading) -> tuple[LiveIndex, Embedder]:
        """The index and the query embedder of the vector set that answers (the first, or the
        second when ``reading.vectors`` names it)."""
        if not reading.vectors or live.second is None or self.second_embedders is None:
            return live, self.embedder
        return replace(live, dense=live.second.dense), self.second_embedders(reading.vectors)

    def language_counts(self, version: int) -> dict[str, int]:
        """Live chunks per natural language, read once per index version."""
        if self._languages is None or self._languages[0] != version:
            self._languages = (version, self.store.language_counts())
        return self._languages[1]
