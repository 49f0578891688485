"""Self-check: score how well a result answers its query, and retry with a reformulated query.

``confidence(result, query)`` is a weighted mean, in [0, 1], of the signals that are available:

* **dense** (weight 0.45): the best dense cosine among the top ``TOP_EVIDENCE`` hits
  (``breakdown["dense"]``), mapped linearly from the model's range of cosines (``cosine_range``:
  [``DENSE_FLOOR``, ``DENSE_CEIL``] for MiniLM-class models; the e5 family's cosines lie in a
  narrow band far higher, where an unrelated question's best hit is near 0.75) to [0, 1];
  absent when no top hit came from the dense index (BM25-only runs);
* **coverage** (weight 0.40): the share of the query's content terms (stop words dropped,
  identifiers split) found in the top ``TOP_EVIDENCE`` hits; absent for a query of stop words;
* **margin** (weight 0.15): how far the best final score stands above the mean of the next
  four, relative to it; absent with one result or a non-positive best score.

The weights of absent signals are left out of the mean; with no result, or no signal, it is 0.
``SelfCheck.run`` retries below ``context.confidence_threshold``, at most ``max_retries`` times,
and keeps the best attempt (the first on ties). See ``reformulate`` for the offline rewrites.

Every attempt is judged against the *original* question: coverage counts its terms, and, given a
``relevance`` function, a retry's dense signal is its hits' cosine to the original question
rather than to the rewrite (a rewrite borrows terms from the hits, so its own cosine to them
says little: without this, off-topic questions were lifted above the threshold by a retry).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from hybrid_rag.errors import describe
from hybrid_rag.lang.query import query_language
from hybrid_rag.lang.tokenize import content_terms
from hybrid_rag.protocols import Generator
from hybrid_rag.retrieval.fusion import RRF_K, reciprocal_rank_fusion
from hybrid_rag.settings import ContextSettings
from hybrid_rag.types import Hit, QueryResult, ScoredChunk, StageTiming, Trace

TOP_EVIDENCE = 3
DENSE_FLOOR, DENSE_CEIL = 0.15, 0.65  # cosines of unrelated / clearly related text for MiniLM-class models
# multilingual-e5-small: median off-topic / answerable top-1 cosine
# (RESULTS.md#context-quotes-answering-lines)
E5_RANGE = (0.77, 0.87)
WEIGHTS = {"dense": 0.45, "coverage": 0.40, "margin": 0.15}
EXPANSION_TERMS = 5
MAX_PARTS = 3
REFORMULATE_SYSTEM = "You rewrite search queries. Reply with the rewritten query only, on one line."
REFORMULATE_PROMPT = (
    "A search for the question below found weak evidence. Rewrite it as a search query that is more "
    "likely to find passages or code answering it: use the likely technical terms and drop filler "
    "words.\n\nQuestion: {query}\nAlready tried: {tried}"
)
_WORD = re.compile(r"\w+")
# a new question starts after "and" / "also" when a question word follows, in each language listed
# ("what is lift and how does drag scale", "что такое пароль и как его сбросить")
_NEW_QUESTION = {
    "en": (
        "and|also|as well as",
        "how|what|why|when|where|which|who|whose|does|do|is|are|can|should|could|would|will",
    ),
    "ru": ("и|а также|а", "как|что|почему|зачем|когда|где|какой|какая|какое|какие|кто|сколько|можно ли"),
    "pt": ("e|e também|também", "como|o que|por que|porque|quando|onde|qual|quais|quem"),
    "es": ("y|también", "cómo|como|qué|por qué|cuándo|dónde|cuál|cuáles|quién"),
    "de": ("und|auch", "wie|was|warum|wann|wo|welche|welcher|welches|wer"),
}
_PART_SPLIT = re.compile(
    r"\?\s*|;\s*|"
    + "|".join(rf"\s+(?:{joins})\s+(?=(?:{words})\b)" for joins, words in _NEW_QUESTION.values()),
    re.IGNORECASE,
)


def _clip(x: float) -> float:
    return min(max(x, 0.0), 1.0)


def cosine_range(model_name: str) -> tuple[float, float]:
    """The dense cosines of unrelated and of clearly related text for the embedding model
    ``model_name``: the e5 family's (``multilingual-e5-small``, ``e5-...``), else MiniLM-class.

    >>> cosine_range("sentence-transformers/all-MiniLM-L6-v2#defs2") == (DENSE_FLOOR, DENSE_CEIL)
    True
    >>> cosine_range("multilingual-e5-small") == E5_RANGE
    True
    """
    name = model_name.rsplit("/", 1)[-1].lower()
    return E5_RANGE if name.startswith(("e5-", "multilingual-e5")) else (DENSE_FLOOR, DENSE_CEIL)


def confidence(
    result: QueryResult,
    query: str,
    dense: Sequence[float] | None = None,
    *,
    cosines: tuple[float, float] = (DENSE_FLOOR, DENSE_CEIL),
    lang: str | None = None,
) -> float:
    """How likely ``result`` holds the answer to ``query``, in [0, 1]; see the module docstring.

    ``dense``: the top hits' cosines to ``query``, in place of their ``breakdown["dense"]`` (which
    is the cosine to whatever query retrieved them); NaN for a hit without a vector. ``cosines``:
    the model's ``cosine_range``. ``lang``: the question's language (None: detected)."""
    chunks = result.chunks
    if not chunks:
        return 0.0
    top = chunks[:TOP_EVIDENCE]
    signals: dict[str, float] = {}
    if dense is None:
        dense = [c.breakdown["dense"] for c in top if "dense" in c.breakdown]
    else:
        dense = [d for d in dense[: len(top)] if d == d]  # NaN != NaN
    if dense:
        floor, ceil = cosines
        signals["dense"] = _clip((max(dense) - floor) / (ceil - floor))
    lang = lang or query_language(query).code  # the hits are read in the question's language
    terms = set(content_terms(query, lang))
    if terms:
        found = {t for c in top for t in content_terms(c.text, lang)}
        signals["coverage"] = len(terms & found) / len(terms)
    best = chunks[0].score
    if len(chunks) > 1 and best > 0:
        rest = [c.score for c in chunks[1:5]]
        signals["margin"] = _clip((best - sum(rest) / len(rest)) / best)
    if not signals:
        return 0.0
    return float(sum(WEIGHTS[k] * v for k, v in signals.items()) / sum(WEIGHTS[k] for k in signals))


def kept_confidence(
    result: QueryResult,
    query: str,
    kept: Mapping[int, str],
    *,
    cosines: tuple[float, float] = (DENSE_FLOOR, DENSE_CEIL),
    lang: str | None = None,
) -> float:
    """``confidence`` of what a context kept: the quoted chunks alone, in rank order (``kept``:
    chunk id -> its quoted lines), the coverage counted on the quoted lines; 0 when none is kept.

    A context at a small budget quotes a few lines of a few results: this says how well those
    answer, where ``confidence`` says how well everything retrieved does."""
    chunks = tuple(replace(c, chunk=replace(c.chunk, text=kept[c.id])) for c in result.chunks if c.id in kept)
    return confidence(replace(result, chunks=chunks), query, cosines=cosines, lang=lang)


def keywords(query: str, lang: str | None = None) -> str:
    """The query without stop words, original spelling kept: ``"how do I open a file"`` → ``"open file"``
    (``lang``: the question's language; None: detected)."""
    lang = lang or query_language(query).code
    return " ".join(dict.fromkeys(w for w in _WORD.findall(query) if content_terms(w, lang)))


def split_parts(query: str, lang: str | None = None) -> list[str]:
    """A multi-part question cut at ``?``, ``;`` and ``and``/``also`` before a question word; the
    parts that have content terms (in ``lang``, the question's), at most ``MAX_PARTS``. One part
    means "not multi-part"."""
    lang = lang or query_language(query).code
    parts = [p.strip(" ,.") for p in _PART_SPLIT.split(query)]
    return [p for p in parts if p and content_terms(p, lang)][:MAX_PARTS]


def expansion_terms(
    query: str, chunks: Sequence[ScoredChunk], n: int = EXPANSION_TERMS, lang: str | None = None
) -> list[str]:
    """The ``n`` content terms most frequent in the top hits that the query lacks (ties: alphabetical);
    numbers and two-letter terms are left out; read in ``lang`` (the question's; None: detected)."""
    lang = lang or query_language(query).code
    have = set(content_terms(query, lang))
    counts: dict[str, int] = {}
    for c in chunks[:TOP_EVIDENCE]:
        for t in content_terms(c.text, lang):
            if t not in have and len(t) > 2 and not t.isdigit():
                counts[t] = counts.get(t, 0) + 1
    return [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def reformulate(
    query: str, best: QueryResult, tried: set[str], lang: str | None = None
) -> tuple[str, list[str]] | None:
    """The next offline rewrite not tried yet, as (strategy, queries), or None when none is left.

    In order: ``split`` (a multi-part question, one search a part, merged), ``expand`` (keywords
    plus ``EXPANSION_TERMS`` terms from the best attempt's top hits), ``keywords`` (stop words dropped);
    ``lang``: the question's language (None: detected).
    """
    lang = lang or query_language(query).code
    parts = split_parts(query, lang)
    base = keywords(query, lang)
    extra = " ".join(expansion_terms(query, best.chunks, lang=lang))
    candidates = [
        ("split", parts if len(parts) > 1 else []),
        ("expand", [f"{base} {extra}".strip()] if extra else []),
        ("keywords", [base] if base else []),
    ]
    for strategy, queries in candidates:
        key = " | ".join(queries)
        if queries and key.lower() not in tried:
            return strategy, queries
    return None


def merge_results(query: str, results: Sequence[QueryResult]) -> QueryResult:
    """Several results fused by RRF (k = ``RRF_K``; ties by chunk id), as many as the longest;
    each chunk keeps the breakdown from the list where it ranked best, plus ``selfcheck_rrf``."""
    best: dict[int, tuple[int, ScoredChunk]] = {}
    for r in results:
        for rank, c in enumerate(r.chunks, start=1):
            if c.id not in best or rank < best[c.id][0]:
                best[c.id] = (rank, c)
    runs = {f"{n:03d}": [Hit(c.id, c.score) for c in r.chunks] for n, r in enumerate(results)}
    size = max((len(r.chunks) for r in results), default=0)
    fused = reciprocal_rank_fusion(runs, k=RRF_K)[:size]
    chunks = tuple(
        replace(best[f.id][1], score=f.score, breakdown={**best[f.id][1].breakdown, "selfcheck_rrf": f.score})
        for f in fused
    )
    timings = tuple(t for r in results for t in r.trace.timings)
    notes = tuple(dict.fromkeys(n for r in results for n in r.trace.notes))
    first = results[0].trace
    trace = Trace(timings, notes, first.dense, first.unread, vectors=first.vectors)
    matches = {k: v for r in reversed(results) for k, v in r.matches.items()}
    return QueryResult(query, results[0].mode, chunks, trace, results[0].index_version, matches=matches)


@dataclass(frozen=True)
class Attempt:
    """One retrieval: the query (parts joined by `` | ``), how it was made, and what it scored."""

    query: str
    strategy: str  # original, generator, split, expand, keywords
    confidence: float
    timings: tuple[StageTiming, ...]
    note: str = ""

    @property
    def seconds(self) -> float:
        return sum(t.seconds for t in self.timings)

    def to_dict(self) -> dict[str, object]:
        stages: dict[str, float] = {}
        for t in self.timings:
            stages[t.stage] = stages.get(t.stage, 0.0) + t.seconds * 1000
        return {
            "query": self.query,
            "strategy": self.strategy,
            "confidence": round(self.confidence, 6),
            "ms": round(self.seconds * 1000, 3),
            "stages_ms": {k: round(v, 3) for k, v in stages.items()},
            "note": self.note,
        }


@dataclass(frozen=True)
class Checked:
    """The best attempt's result; its trace holds the kept attempt's stages (a kept retry's
    ``reformulate`` among them), the other attempts' time as ``self_check``, and the notes."""

    result: QueryResult
    attempts: tuple[Attempt, ...]
    confidence: float
    weak: bool

    @property
    def retried(self) -> bool:
        return len(self.attempts) > 1

    def to_dict(self) -> dict[str, object]:
        return {
            "confidence": round(self.confidence, 6),
            "weak": self.weak,
            "attempts": [a.to_dict() for a in self.attempts],
        }


class SelfCheck:
    """Retrieve; below the confidence threshold, reformulate and retrieve again (module docstring)."""

    def __init__(
        self,
        settings: ContextSettings,
        retrieve: Callable[[str], QueryResult],
        generator: Generator | None = None,
        relevance: Callable[[str, Sequence[int]], Sequence[float]] | None = None,
        *,
        cosines: tuple[float, float] = (DENSE_FLOOR, DENSE_CEIL),
        lang: str | None = None,
    ) -> None:
        """``relevance(query, chunk_ids)``: dense cosines of the chunks to ``query`` (NaN where
        there is no vector), to judge a retry against the original question. ``cosines``: the
        dense model's ``cosine_range``. ``lang``: the question's language, decided once with the
        query (``lang/query.py``; None: detected at each run)."""
        self.cosines = cosines
        self.lang = lang
        self.threshold = settings.confidence_threshold
        self.max_retries = settings.max_retries
        self.retrieve = retrieve
        self.generator = generator
        self.relevance = relevance

    def judge(self, result: QueryResult, query: str) -> float:
        """A retry's confidence as an answer to the original ``query`` (module docstring)."""
        top = result.chunks[:TOP_EVIDENCE]
        lang = self.lang or query_language(query).code
        if self.relevance is None or not any("dense" in c.breakdown for c in top):
            return confidence(result, query, cosines=self.cosines, lang=lang)
        dense = list(self.relevance(query, [c.id for c in top]))
        return confidence(result, query, dense=dense, cosines=self.cosines, lang=lang)

    def run(self, query: str) -> Checked:
        results = [self.retrieve(query)]
        first = confidence(results[0], query, cosines=self.cosines, lang=self.lang)
        attempts = [Attempt(query, "original", first, results[0].trace.timings)]
        tried = {query.strip().lower()}
        notes: list[str] = []
        use_generator = self.generator is not None
        unread = results[0].trace.unread  # the index cannot read the question (retrieval/reading.py):
        if unread:  # a retry would search with the words of unrelated results; say so, weak
            notes.append("self-check: no retry: the index cannot read the question's language")
        while not unread and len(attempts) <= self.max_retries:
            best = max(range(len(attempts)), key=lambda i: (attempts[i].confidence, -i))
            if attempts[best].confidence >= self.threshold:
                break
            start = time.perf_counter()
            strategy, queries, note = self._reformulate(query, results[best], tried, use_generator)
            spent = StageTiming("reformulate", time.perf_counter() - start, note)
            if note and strategy != "generator":
                use_generator = False
                notes.append(note)
            if not queries:
                notes.append("self-check: no further reformulation to try")
                break
            tried.add(" | ".join(queries).lower())
            found = [self.retrieve(q) for q in queries]
            result = found[0] if len(found) == 1 else merge_results(query, found)
            results.append(result)
            attempts.append(
                Attempt(
                    " | ".join(queries),
                    strategy,
                    self.judge(result, query),
                    (spent, *result.trace.timings),
                    note,
                )
            )
        best = max(range(len(attempts)), key=lambda i: (attempts[i].confidence, -i))
        chosen = attempts[best]
        weak = bool(chosen.confidence < self.threshold) or bool(unread)
        if len(attempts) > 1:
            notes.append(
                f"self-check: confidence {attempts[0].confidence:.2f} below {self.threshold:.2f}; "
                f"{len(attempts) - 1} retr{'y' if len(attempts) == 2 else 'ies'}, kept attempt {best + 1} "
                f"({chosen.strategy}, {chosen.confidence:.2f})" + ("; evidence still weak" if weak else "")
            )
        elif weak:
            notes.append(f"self-check: confidence {chosen.confidence:.2f} below {self.threshold:.2f}")
        others = sum(a.seconds for i, a in enumerate(attempts) if i != best)
        extra = (
            (StageTiming("self_check", others, f"{len(attempts) - 1} retries"),) if len(attempts) > 1 else ()
        )
        kept = results[best].trace
        final = replace(
            results[best],
            query=query,
            trace=replace(kept, timings=chosen.timings + extra, notes=kept.notes + tuple(notes)),
        )
        return Checked(final, tuple(attempts), chosen.confidence, weak)

    def _reformulate(
        self, query: str, best: QueryResult, tried: set[str], use_generator: bool
    ) -> tuple[str, list[str], str]:
        """(strategy, queries, note): the generator's rewrite when configured, else the offline one."""
        note = ""
        if use_generator and self.generator is not None:
            try:
                reply = self.generator.generate(
                    REFORMULATE_PROMPT.format(query=query, tried="; ".join(sorted(tried))),
                    system=REFORMULATE_SYSTEM,
                    max_tokens=64,
                )
                line = next((s.strip().strip("\"'` ") for s in str(reply).splitlines() if s.strip()), "")
                if line and line.lower() not in tried:
                    return "generator", [line], ""
                note = "self-check: the generator gave no new query; offline reformulation used"
            except Exception as exc:  # any generator failure degrades to the offline rewrite
                note = f"self-check: generator failed ({describe(exc)}); offline reformulation used"
        offline = reformulate(query, best, tried, self.lang)
        if offline is None:
            return "none", [], note
        return offline[0], offline[1], note
