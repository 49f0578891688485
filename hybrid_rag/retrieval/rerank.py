"""Rerank the head of the fused list: four backends behind the ``Reranker`` protocol, one pure merge.

Backends (``rerank.backend``):

* ``embedding_windows`` (:class:`EmbeddingWindowReranker`): the query against overlapping word
  windows of each candidate, with the embedding model the index already uses; a candidate's
  score is its best window (max-sim). Needs no extra weights.
* ``cross_encoder`` (``models/rerankers.py``'s :class:`CrossEncoderReranker`): ``rerank.model``
  on ONNX Runtime when it has an ONNX form (``ms-marco-MiniLM-L-12-v2`` ships offline; see
  ``onnx_runtime.py``), else a sentence-transformers ``CrossEncoder`` from a local folder or the
  local Hugging Face cache, never downloaded.
* ``api`` (``models/rerankers.py``'s :class:`ApiReranker`): a Cohere / Jina / TEI-compatible
  ``/rerank`` endpoint.
* ``lexical`` (:class:`LexicalReranker`): BM25 computed over the candidate set only.
* ``overlap`` (:class:`OverlapReranker`): the share of the query's words a candidate contains
  (the ``SimpleReranker`` of the systems hybrid-rag replaces; see docs/migrating.md).

:func:`apply_rerank` merges the scores back. Conventions (docs/contributing.md#named-conventions):

* only the first ``top_n_in`` candidates move; the rest follow in their order. Scores fall
  monotonically along the returned list (thresholds and MMR read them): if a tail score would
  reach the head's lowest, the whole tail is shifted down by one constant (its spacing kept; its
  earlier scores stay in its breakdown, e.g. ``fusion``);
* the reranker's own score is kept in ``breakdown[name]`` and its rank in ``breakdown[name_rank]``;
* ``blend="none"``: the final score is the reranker's score; ``"rrf"``: ``w / (k + rerank rank) +
  (1 - w) / (k + previous rank)`` with k = 60 and ranks from 1, tied reranker scores sharing the
  best rank (so a reranker that cannot tell candidates apart leaves their order alone);
  ``"linear"``: ``w · minmax(reranker) + (1 - w) · minmax(previous score)`` over the head;
* the head is sorted by final score descending, ties by ascending chunk id.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from hybrid_rag.errors import ConfigError
from hybrid_rag.lang.query import Asked
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.models.rerankers import ApiReranker, CrossEncoderReranker
from hybrid_rag.protocols import Embedder, ReadsLanguage, Reranker
from hybrid_rag.retrieval.fusion import RRF_K, minmax_normalize, rrf_term
from hybrid_rag.settings import BM25Settings, RerankSettings
from hybrid_rag.types import ScoredChunk
from hybrid_rag.vectors import window_spans

Blend = Literal["none", "rrf", "linear"]
BM25_K1 = 1.2  # the reranker's own BM25 over the candidate set (Robertson; Lucene's IDF)
BM25_B = 0.75
_WORD_SPAN = re.compile(r"\S+")
_TAIL_GAP = 1e-6  # relative gap between the reranked head's last score and the tail's first

__all__ = [
    "EmbeddingWindowReranker",
    "LexicalReranker",
    "OverlapReranker",
    "apply_rerank",
    "make_reranker",
    "rerank_candidates",
]


# -- the merge ---------------------------------------------------------------------------------


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """1-based ranks by score descending; equal scores share the best rank (1, 2, 2, 4).

    >>> competition_ranks(np.array([0.5, 0.9, 0.5])).tolist()
    [2, 1, 2]
    """
    scores = np.asarray(scores, dtype=np.float64)
    return np.array([1 + int(np.sum(scores > s)) for s in scores], dtype=np.int64)


def blend_scores(
    rerank: np.ndarray, previous: np.ndarray, blend: Blend, weight: float, k: int = RRF_K
) -> np.ndarray:
    """The head's final scores from the reranker's scores and the previous stage's (in rank order)."""
    rerank = np.asarray(rerank, dtype=np.float64)
    if blend == "none":
        return rerank
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"rerank weight must be in [0, 1], got {weight}")
    if blend == "rrf":
        previous_rank = np.arange(1, len(rerank) + 1, dtype=np.float64)
        return rrf_term(competition_ranks(rerank), k, weight) + rrf_term(previous_rank, k, 1.0 - weight)
    if blend == "linear":
        return weight * minmax_normalize(rerank) + (1.0 - weight) * minmax_normalize(previous)
    raise ValueError(f"unknown blend {blend!r}; valid: none, rrf, linear")


def apply_rerank(
    candidates: Sequence[ScoredChunk],
    scores: np.ndarray | Sequence[float],
    name: str,
    top_n_in: int,
    *,
    blend: Blend = "none",
    weight: float = 1.0,
) -> list[ScoredChunk]:
    """The first ``top_n_in`` candidates (in the previous stage's order) re-ordered by ``scores``,
    one per head candidate, then the rest unchanged; see the module docstring for the blends.

    Typical use: ``apply_rerank(fused, reranker.score(q, fused[:40]), reranker.name, 40)``.
    """
    if top_n_in <= 0:
        return list(candidates)
    head = list(candidates[:top_n_in])
    raw = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(raw) != len(head):
        raise ValueError(f"{len(raw)} rerank scores for {len(head)} candidates")
    if np.isnan(raw).any():
        raise ValueError(f"reranker {name!r} returned a NaN score")
    if not head:
        return []
    final = blend_scores(raw, np.array([c.score for c in head]), blend, weight)
    rerank_rank = competition_ranks(raw)
    order = sorted(range(len(head)), key=lambda i: (-final[i], head[i].id))
    reranked = [
        replace(
            head[i],
            score=float(final[i]),
            breakdown={**head[i].breakdown, name: float(raw[i]), f"{name}_rank": float(rerank_rank[i])},
        )
        for i in order
    ]
    return reranked + tail_below(list(candidates[top_n_in:]), reranked[-1].score)


def tail_below(tail: list[ScoredChunk], floor: float) -> list[ScoredChunk]:
    """``tail`` unchanged if its scores are all under ``floor``, else all shifted down by one constant
    so that its best is just under ``floor`` (order and spacing kept)."""
    if not tail:
        return tail
    top = max(c.score for c in tail)
    if top < floor:
        return tail
    shift = top - floor + _TAIL_GAP * max(1.0, abs(floor))
    return [replace(c, score=c.score - shift) for c in tail]


def rerank_candidates(
    reranker: Reranker,
    query: str,
    candidates: Sequence[ScoredChunk],
    settings: RerankSettings,
    asked: Asked | None = None,
) -> list[ScoredChunk]:
    """Score the head with ``reranker`` and merge it back as ``settings`` say (the pipeline's one
    line). ``asked``: the question's language, decided once, for a reranker that reads one
    (``ReadsLanguage``: the lexical one); None: it is decided from ``query``."""
    head = list(candidates[: settings.top_n_in])
    if not head:
        scores = np.zeros(0)
    elif isinstance(reranker, ReadsLanguage):
        scores = reranker.score_asked(asked if asked is not None else Asked.of(query), head)
    else:
        scores = reranker.score(query, head)
    return apply_rerank(
        candidates, scores, reranker.name, settings.top_n_in, blend=settings.blend, weight=settings.weight
    )


# -- lexical -----------------------------------------------------------------------------------


def bm25_over_candidates(
    query_terms: Sequence[str], docs_terms: Sequence[Sequence[str]], k1: float = BM25_K1, b: float = BM25_B
) -> np.ndarray:
    """BM25 of each document for the query, with IDF and average length taken from ``docs_terms``.

    IDF is Lucene's ``log(1 + (N - df + 0.5) / (df + 0.5))`` (never negative); a query term that
    repeats counts once. No query terms, or empty documents, give zeros.
    """
    n = len(docs_terms)
    out = np.zeros(n, dtype=np.float64)
    terms = sorted(set(query_terms))
    if n == 0 or not terms:
        return out
    counts = [Counter(doc) for doc in docs_terms]
    lengths = np.array([len(doc) for doc in docs_terms], dtype=np.float64)
    avg = float(lengths.mean()) or 1.0
    norm = k1 * (1.0 - b + b * lengths / avg)
    for term in terms:
        tf = np.array([c.get(term, 0) for c in counts], dtype=np.float64)
        df = int(np.count_nonzero(tf))
        if df == 0:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        out += idf * tf * (k1 + 1.0) / (tf + norm)
    return out


_UNICODE_WORD = re.compile(r"\w+")


def overlap_ratio(query: str, text: str) -> float:
    """|query words ∩ text words| / |query words|, words lower-cased ``\\w+`` runs; 0 without words.

    >>> overlap_ratio("Clay soil drainage", "drainage of clay")
    0.6666666666666666
    """
    words = set(_UNICODE_WORD.findall(query.lower()))
    if not words:
        return 0.0
    return len(words.intersection(_UNICODE_WORD.findall(text.lower()))) / len(words)


class OverlapReranker:
    """Query-word overlap ratio (``overlap_ratio``): no model, no index; ties keep the fused order."""

    name = "overlap"

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        return np.array([overlap_ratio(query, c.text) for c in candidates], dtype=np.float64)


class LexicalReranker:
    """BM25 over the candidate set, with the index's tokenizer: cheap, and blind to synonyms. The
    question is read in the language decided for it (:meth:`score_asked`, the pipeline's call:
    ``Asked``, with its terms analysed once a question); each candidate in its detected one."""

    name = "lexical"

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer if tokenizer is not None else Tokenizer(kind="regex")

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        """The ``Reranker`` call: ``query``'s language decided here, once (:meth:`score_asked`)."""
        return self.score_asked(Asked.of(query), candidates)

    def score_asked(self, asked: Asked, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        """BM25 of each candidate for the question ``asked``, read in its decided language."""
        if not candidates:
            return np.zeros(0, dtype=np.float64)
        docs = self.tokenizer.tokenize_many([c.text for c in candidates])
        return bm25_over_candidates(self.tokenizer.asked_terms(asked), docs)


# -- embedding windows -------------------------------------------------------------------------


def text_windows(text: str, window: int, overlap: int) -> list[str]:
    """``text`` cut into slices of ``window`` whitespace-separated words overlapping by ``overlap``
    (the last one aligned to the end); a text that fits, or has no words, is one window.

    >>> text_windows("a b c d e", 3, 1)
    ['a b c', 'c d e']
    """
    spans = [m.span() for m in _WORD_SPAN.finditer(text)]
    if len(spans) <= window:
        return [text]
    return [text[spans[s][0] : spans[e - 1][1]] for s, e in window_spans(len(spans), window, overlap)]


def max_window_similarity(query_vec: np.ndarray, window_vecs: Sequence[np.ndarray]) -> np.ndarray:
    """Per candidate, the highest inner product of the query with one of its window vectors."""
    query = np.asarray(query_vec, dtype=np.float64).reshape(-1)
    return np.array([float(np.max(np.asarray(w, dtype=np.float64) @ query)) for w in window_vecs])


class EmbeddingWindowReranker:
    """Max-sim of the query over word windows of each candidate, with the index's own embedder.

    Window vectors are cached per chunk sha256 (an LRU of ``cache_size`` chunks), so candidates
    that come back for later queries cost nothing; with ``window_words`` at or above a chunk's
    length this is the plain cosine of query and chunk (dense re-scoring).
    """

    name = "embedding_windows"

    def __init__(
        self, embedder: Embedder, window_words: int = 64, overlap_words: int = 16, cache_size: int = 4096
    ) -> None:
        if window_words <= 0 or not 0 <= overlap_words < window_words:
            raise ConfigError(
                f"rerank windows need 0 <= window_overlap_words < window_words, got "
                f"{overlap_words} and {window_words}"
            )
        self.embedder = embedder
        self.window_words = window_words
        self.overlap_words = overlap_words
        self.cache_size = max(int(cache_size), 0)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        if not candidates:
            return np.zeros(0, dtype=np.float64)
        query_vec = self.embedder.embed_queries([query])[0]
        return max_window_similarity(query_vec, self._window_vectors(candidates))

    def _window_vectors(self, candidates: Sequence[ScoredChunk]) -> list[np.ndarray]:
        with self._lock:
            found = {
                c.chunk.sha256: self._cache[c.chunk.sha256]
                for c in candidates
                if c.chunk.sha256 in self._cache
            }
        missing = {c.chunk.sha256: c.text for c in candidates if c.chunk.sha256 not in found}
        if missing:
            texts, owners = [], []
            for key, text in missing.items():
                pieces = text_windows(text, self.window_words, self.overlap_words)
                texts.extend(pieces)
                owners.extend([key] * len(pieces))
            vectors = self.embedder.embed_passages(texts)
            owner_arr = np.array(owners, dtype=object)
            for key in missing:
                found[key] = vectors[owner_arr == key]
            with self._lock:
                for key in missing:
                    self._remember(key, found[key])
        return [found[c.chunk.sha256] for c in candidates]

    def _remember(self, key: str, vectors: np.ndarray) -> None:
        if self.cache_size == 0:
            return
        self._cache[key] = vectors
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


# -- factory -----------------------------------------------------------------------------------


def make_reranker(
    r: RerankSettings,
    embedder: Embedder,
    *,
    bm25: BM25Settings,
    device: str = "cpu",
    runtime: str = "onnx",
    threads: Any = "auto",
) -> Reranker:
    """The reranker ``rerank.backend`` names; cheap (models load on first score). ``bm25``: the
    tokenizer the lexical reranker shares with the index; ``device``, ``runtime`` and ``threads``:
    the cross-encoder's (``embedding.*``: one model runtime for the process)."""
    if r.backend == "embedding_windows":
        return EmbeddingWindowReranker(embedder, r.window_words, r.window_overlap_words)
    if r.backend == "cross_encoder":
        return CrossEncoderReranker(r, device=device, runtime=runtime, threads=threads)
    if r.backend == "api":
        return ApiReranker(r)
    if r.backend == "overlap":
        return OverlapReranker()
    if r.backend == "lexical":
        return LexicalReranker(Tokenizer.for_settings(bm25))
    raise ConfigError(
        f"unknown rerank.backend {r.backend!r}; "
        "valid: embedding_windows, cross_encoder, api, lexical, overlap"
    )
