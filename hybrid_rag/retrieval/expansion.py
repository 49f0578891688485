"""Query expansion: extra ranked lists, found from the query and the first pass, to fuse with it.

Methods (``expansion.method``):

* ``prf`` (default, offline): pseudo-relevance feedback from the top ``prf_docs`` of the first
  pass fused by RRF. Lexical: RM3-style expansion terms of those documents, searched in BM25
  with the query (run ``prf_bm25``). Dense: Rocchio, the query vector moved towards the mean of
  their vectors (run ``prf_dense``).
* ``hyde``: an LLM writes a passage that would answer the query; the passage's embedding is
  searched in the dense index (run ``hyde``) (Gao et al., "Precise Zero-Shot Dense Retrieval
  without Relevance Labels", ACL 2023). When it cannot (no generator, a failing or unreachable
  one, an empty passage, a query without a dense list), PRF runs instead, and the notes say so.

Multi-query reformulation has its own switch (``features.multi_query``), beside either method:
an LLM rewrites the query ``multi_query_n`` ways and each variant is searched like the query
(runs ``mq1_dense``, ``mq1_bm25``, ...).

Expansion only adds lists of the kinds the first pass used (a ``bm25``-only query gets no dense
run), and it never fails the query: a missing or failing generator (any exception it raises)
gives no runs from it and a note for the trace.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hybrid_rag.errors import ConfigError, RemoteServiceError, describe
from hybrid_rag.indices.live import LiveIndex
from hybrid_rag.lang.detect import UNDETERMINED
from hybrid_rag.lang.query import Asked, query_language
from hybrid_rag.lang.tokenize import MIN_SHARE, Tokenizer
from hybrid_rag.protocols import Embedder, Generator, KnowsTerms, OwnTokenizer
from hybrid_rag.retrieval.fusion import RRF_K, reciprocal_rank_fusion
from hybrid_rag.retrieval.question_terms import with_terms
from hybrid_rag.retrieval.reading import KNOWN_TERMS_MIN_SHARE
from hybrid_rag.settings import BM25Settings, ExpansionSettings, RetrievalSettings
from hybrid_rag.tokens import get_encoding
from hybrid_rag.types import ConfigEnum, Hit

# The BM25 terms of chunks by id, through the given tokenizer (the store's token cache in the engine)
ChunkTerms = Callable[[Sequence[int], Tokenizer], Mapping[int, Sequence[str]]]

# Rocchio (1971): q' = α·q + β·mean(relevant) − γ·mean(non-relevant). Pseudo feedback has no
# non-relevant set (γ = 0) and α = 1; β = 0.5 is below the 0.75 that Manning, Raghavan & Schütze
# (Introduction to IR, §9.1.1) suggest for true relevance feedback, because pseudo-relevant
# documents are noisier. Not tuned.
ROCCHIO_BETA = 0.5
# RM3 (Abdul-Jaleel et al., TREC 2004) mixes the query model and the feedback model with
# λ = 0.5, Anserini's default ``originalQueryWeight``.
RM3_ORIGINAL_WEIGHT = 0.5
# BM25 sums per-term scores and counts a repeated query term again, so a term repeated n times
# has weight n: expansion weights are rounded to 0..TERM_RESOLUTION repetitions (0: dropped).
TERM_RESOLUTION = 3
# An expansion term must occur in at least this many feedback documents (when there are that
# many): a word found in one document only says more about that document than about the topic.
MIN_FEEDBACK_DF = 2
STABLE_MEMO_LIMIT = 50_000  # expansion terms whose tokenization is remembered (cleared past it)
MULTI_QUERY_PROMPT = (
    "Rewrite the search query below in {n} different ways, one per line, using other words or "
    "related technical terms that a relevant document might contain. Write only the {n} "
    "rewritten queries: no numbering, no explanations.\n\nQuery: {query}"
)
MULTI_QUERY_TOKENS_PER_VARIANT = 64
_LIST_MARKER = re.compile(
    r"^\s*(?:[-*•·+]+|\(?\d{1,2}[.):\]]|(?:query|variant|rewrite)\s*\d*\s*[:.)-])\s*", re.I
)


class ExpansionMethod(ConfigEnum):
    PRF = "prf"
    HYDE = "hyde"


@dataclass(frozen=True)
class Expansion:
    """What expansion adds to the first pass; ``replace_dense`` drops the first-pass ``dense`` list."""

    runs: Mapping[str, list[Hit]] = field(default_factory=dict)
    replace_dense: bool = False  # HyDE "instead of the query"
    queries: tuple[str, ...] = ()  # generated passages / variants / expansion terms, for the trace
    notes: tuple[str, ...] = ()  # e.g. "expansion skipped (hyde): generator at ... unreachable: ..."
    # what searched each run: a query vector (dense runs) or a query text (BM25 runs), so that
    # fusion can score a candidate another run found (``fusion.complete_runs``)
    probes: Mapping[str, np.ndarray | str] = field(default_factory=dict)


@dataclass(frozen=True)
class FirstPass:
    """What an expansion method starts from: the query, the first pass's ranked lists by name,
    the index version to search again, the filter's allowed ids and the chunks' BM25 terms."""

    query: str
    runs: Mapping[str, list[Hit]]
    live: LiveIndex
    allowed: np.ndarray | None
    chunk_terms: ChunkTerms
    query_vector: np.ndarray | None = None
    asked: Asked | None = None  # the question's language, decided once (None: detected here)

    @property
    def reads(self) -> Asked:
        """How the question and the texts made from it are read (``lang/query.py``)."""
        return self.asked if self.asked is not None else Asked.of(self.query)


# -- pure functions --------------------------------------------------------------------------


def feedback_hits(
    first_pass: Mapping[str, Sequence[Hit]],
    n: int,
    *,
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[Hit]:
    """The ``n`` pseudo-relevant documents: the top of the first pass fused by RRF (scores are
    the fused scores). Both PRF methods feed back these, not the top of their own list, so a
    weak retriever (BM25 on code) does not choose the feedback for its own expansion. A
    document found only by a zero-weight list is never fed back; all-zero weights count as equal.

    >>> feedback_hits({"bm25": [Hit(1, 9.0), Hit(2, 8.0)], "dense": [Hit(2, 0.9), Hit(3, 0.8)]}, 2)
    [Hit(id=2, score=0.03252247488101534), Hit(id=1, score=0.01639344262295082)]
    """
    if n <= 0:
        return []
    if weights is not None and not any(w > 0 for w in weights.values()):
        weights = None
    fused = reciprocal_rank_fusion(first_pass, k=k, weights=weights)
    return [Hit(f.id, f.score) for f in fused if f.score > 0][:n]


def pool_idf(pool: Sequence[Sequence[str]], terms: Collection[str] | None = None) -> dict[str, float]:
    """Lucene's BM25 idf, ln(1 + (N − df + 0.5) / (df + 0.5)), estimated over a pool of term lists
    (for ``terms`` only, when given: a query's pool holds thousands of terms it never needs)."""
    n = len(pool)
    if terms is None:
        df = Counter(term for doc in pool for term in set(doc))
    else:
        wanted = terms if isinstance(terms, (set, frozenset)) else set(terms)
        df = Counter(term for doc in pool for term in wanted.intersection(doc))
    return {term: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for term, d in df.items()}


def select_expansion_terms(
    feedback: Sequence[Sequence[str]],
    pool: Sequence[Sequence[str]],
    n_terms: int,
    *,
    exclude: Collection[str] = (),
    doc_weights: Sequence[float] | None = None,
    min_feedback_df: int = MIN_FEEDBACK_DF,
    keep: Callable[[str], bool] | None = None,
) -> list[tuple[str, float]]:
    """The ``n_terms`` best expansion terms of the feedback documents, with weights summing to 1.

    weight(w) ∝ idf_pool(w) · Σ_d p(d) · tf(w, d) / |d|: the relevance model (RM1) of the
    feedback documents with document weights ``p(d)`` (their fused scores, normalised;
    uniform when absent or not positive), times the idf over the candidate pool so that words
    common to every candidate do not win. Excluded terms, one-character terms, terms without a
    letter (numbers) and, with enough feedback documents, terms found in fewer than
    ``min_feedback_df`` of them are never chosen; nor is a term ``keep`` refuses (asked only of
    terms in the running, best first, so an expensive check runs a few times). Ties break
    alphabetically.

    >>> select_expansion_terms([["faiss", "index"], ["faiss", "gpu"]], [["faiss"], ["index"]], 1)
    [('faiss', 1.0)]
    """
    given = [1.0] * len(feedback) if doc_weights is None else [float(w) for w in doc_weights]
    pairs = [(doc, w) for doc, w in zip(feedback, given, strict=True) if doc]
    if n_terms <= 0 or not pairs:
        return []
    docs = [doc for doc, _ in pairs]
    weights = np.array([w for _, w in pairs], dtype=np.float64)
    if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
        weights = np.ones(len(docs))
    weights = weights / weights.sum()
    pool = pool or docs
    feedback_df = Counter(term for doc in docs for term in set(doc))
    need_df = min_feedback_df if len(docs) >= min_feedback_df else 1
    excluded = set(exclude)
    model: dict[str, float] = {}
    for p, doc in zip(weights, docs, strict=True):
        for term, tf in Counter(doc).items():
            model[term] = model.get(term, 0.0) + float(p) * tf / len(doc)
    idf = pool_idf(pool, model.keys())
    fallback_idf = math.log(1.0 + (len(pool) - 0.5) / 1.5)  # a feedback term the pool lacks: df = 1
    scored = [
        (term, value * idf.get(term, fallback_idf))
        for term, value in model.items()
        if term not in excluded and _is_candidate(term) and feedback_df[term] >= need_df
    ]
    scored.sort(key=lambda item: (-item[1], item[0]))
    chosen: list[tuple[str, float]] = []
    for term, w in scored:
        if len(chosen) >= n_terms or w <= 0:
            break
        if keep is None or keep(term):
            chosen.append((term, w))
    total = sum(w for _, w in chosen)
    return [(t, w / total) for t, w in chosen] if total > 0 else []


def term_repetitions(
    terms: Sequence[tuple[str, float]], resolution: int = TERM_RESOLUTION
) -> list[tuple[str, int]]:
    """Weights as repetition counts, round(``resolution`` · weight / top weight); a term that
    rounds to 0 (under 1 / (2 · resolution) of the top weight) is dropped.

    >>> term_repetitions([("index", 0.6), ("vector", 0.4), ("def", 0.05)])
    [('index', 3), ('vector', 2)]
    """
    top = max((w for _, w in terms), default=0.0)
    if top <= 0:
        return [(t, 1) for t, _ in terms]
    counts = [(t, round(resolution * w / top)) for t, w in terms]
    return [(t, c) for t, c in counts if c > 0]


def expansion_query(
    query: str,
    n_query_terms: int,
    terms: Sequence[tuple[str, float]],
    *,
    original_weight: float = RM3_ORIGINAL_WEIGHT,
    resolution: int = TERM_RESOLUTION,
) -> str:
    """A BM25 query text for RM3's mix: λ·query + (1 − λ)·expansion terms, weights as repetitions
    (:func:`term_repetitions`); the query is repeated so that its terms carry about λ / (1 − λ)
    times the repetitions of the expansion terms.

    >>> expansion_query("faiss gpu", 2, [("index", 0.6), ("vector", 0.4)])
    'faiss gpu faiss gpu index index index vector vector'
    """
    if not 0 < original_weight < 1:
        raise ValueError(f"original_weight must be in (0, 1), got {original_weight}")
    counts = term_repetitions(terms, resolution)
    if not counts:
        return query
    expanded = [t for t, c in counts for _ in range(c)]
    if n_query_terms <= 0:
        return " ".join(expanded)
    repeats = max(1, round(original_weight / (1 - original_weight) * len(expanded) / n_query_terms))
    return " ".join([query] * repeats + expanded)


def rocchio(query: np.ndarray, feedback: np.ndarray, beta: float = ROCCHIO_BETA) -> np.ndarray:
    """normalise(q + β · mean(feedback rows)); the query itself when there is no feedback.

    A result that cancels to zero falls back to the query (a zero vector retrieves nothing).
    """
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    rows = np.asarray(feedback, dtype=np.float64).reshape(-1, q.size) if np.size(feedback) else None
    moved = q if rows is None else q + beta * rows.mean(axis=0)
    norm = float(np.linalg.norm(moved))
    if norm <= 1e-12:
        moved, norm = q, float(np.linalg.norm(q))
    return (moved / norm if norm > 0 else moved).astype(np.float32)


def parse_variants(text: str, query: str, n: int) -> list[str]:
    """Up to ``n`` query rewrites from an LLM answer, one per line.

    Strips bullets, numbering ("1.", "2)", "Query 3:"), quotes and markdown emphasis; drops empty
    lines, preambles ending with ":", the query itself and repeats (case-insensitively).

    >>> parse_variants('Here are 2 queries:\\n1. "faiss on GPU"\\n2) FAISS on gpu\\n- vector search', "x", 2)
    ['faiss on GPU', 'vector search']
    """
    seen = {_canonical(query)}
    out: list[str] = []
    for line in text.splitlines():
        variant = _LIST_MARKER.sub("", line).strip().strip("*_`").strip().strip("\"'“”‘’").strip()
        key = _canonical(variant)
        if not key or variant.endswith(":") or key in seen:
            continue
        seen.add(key)
        out.append(variant)
        if len(out) >= n:
            break
    return out


def truncate_tokens(text: str, max_tokens: int, encoding: str = "cl100k_base") -> str:
    """``text`` cut to at most ``max_tokens`` tiktoken tokens (whole when it fits)."""
    enc = get_encoding(encoding)
    ids = enc.encode(text, disallowed_special=())
    return text if len(ids) <= max_tokens else enc.decode(ids[: max(max_tokens, 0)])


def _is_candidate(term: str) -> bool:
    return len(term) > 1 and any(c.isalpha() for c in term)


def _canonical(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


# -- the stage -------------------------------------------------------------------------------


class QueryExpander:
    """Runs the configured expansion method; cheap to build (the tokenizer loads on first use)."""

    def __init__(
        self,
        settings: ExpansionSettings,
        embedder: Embedder,
        generator: Generator | None,
        *,
        retrieval: RetrievalSettings,
        bm25: BM25Settings,
        encoding: str = "cl100k_base",
    ) -> None:
        """``retrieval``: the list sizes, fusion weights and RRF k the expansion searches and
        weighs with; ``bm25``: the index's tokenizer; ``encoding``: HyDE's passage budget."""
        try:
            settings.hyde_prompt.format(query="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"expansion.hyde_prompt must use only the field {{query}}: {exc!r}") from None
        self.expansion = settings
        self.retrieval = retrieval
        self.encoding = encoding
        self.embedder = embedder
        self.generator = generator
        self.method = ExpansionMethod.from_str(settings.method)
        self._tokenizer = Tokenizer.for_settings(bm25)
        self._stable: dict[tuple[str, str], bool] = {}  # (tokenizer key, term) -> tokenizes to itself

    def using(self, embedder: Embedder | None) -> QueryExpander:
        """This expander with another embedder (the second vector set's, ``retrieval/second_set.py``);
        itself for None or its own."""
        if embedder is None or embedder is self.embedder:
            return self
        other = copy.copy(self)
        other.embedder = embedder
        return other

    def expand(
        self,
        query: str,
        first_pass: Mapping[str, list[Hit]],
        live: LiveIndex,
        allowed_ids: np.ndarray | None,
        chunk_terms: ChunkTerms,
        *,
        query_vector: np.ndarray | None = None,
        method: bool = True,
        multi_query: bool = False,
        asked: Asked | None = None,
    ) -> Expansion:
        """Extra runs for ``query``: the configured method's (``method``) and the generator's
        rewrites' (``multi_query``); ``query_vector`` (the first pass's) saves one embedding;
        ``asked``: the question's language as decided once (None: detected)."""
        if not query.strip():
            return Expansion(notes=("expansion skipped: empty query",))
        fp = FirstPass(query, first_pass, live, allowed_ids, chunk_terms, query_vector, asked)
        parts: list[Expansion] = []
        if method:
            parts.append(self._method(fp))
        if multi_query:
            parts.append(self._with_generator("multi_query", lambda g: self._multi_query(fp, g)))
        return merge_expansions(parts)

    def _method(self, fp: FirstPass) -> Expansion:
        """PRF, or HyDE with PRF in its place whenever HyDE adds nothing."""
        if self.method is ExpansionMethod.HYDE:
            hyde = self._with_generator("hyde", lambda g: self._hyde(fp, g))
            if hyde.runs:
                return hyde
            instead = Expansion(notes=("expansion: offline prf used instead of hyde",))
            return merge_expansions([hyde, instead, self._prf(fp)])
        return self._prf(fp)

    def _with_generator(self, name: str, call: Callable[[Generator], Expansion]) -> Expansion:
        """``call(generator)``, or a note when there is none or it fails in any way: a Generator
        is pluggable, and whatever it raises must skip its stage, never fail the query."""
        if self.generator is None:
            return _skipped(name, "no generator configured (set generator.base_url)")
        try:
            return call(self.generator)
        except RemoteServiceError as exc:
            return _skipped(name, str(exc))
        except Exception as exc:  # any failure of a pluggable generator: see the docstring
            return _skipped(name, f"the generator failed: {describe(exc)}")

    def _prf(self, fp: FirstPass) -> Expansion:
        e, r = self.expansion, self.retrieval
        base = {"dense": r.dense_weight, "bm25": r.bm25_weight}
        weights = {name: base.get(name, 1.0) for name in fp.runs}
        feedback = feedback_hits(fp.runs, e.prf_docs, weights=weights, k=r.rrf_k)
        if not feedback:
            return Expansion(notes=("prf: the first pass found nothing to feed back",))
        runs: dict[str, list[Hit]] = {}
        probes: dict[str, np.ndarray | str] = {}
        terms: list[tuple[str, float]] = []
        notes: list[str] = []
        tokenizer = self._tokenizer_for(fp.live)
        bm25 = fp.live.bm25
        known = bm25.known_terms if isinstance(bm25, KnowsTerms) else None
        reads = fp.reads
        skip = lexical_skip_reason(fp.query, fp.runs, tokenizer, known, lang=reads.code_of(fp.query))
        if skip:
            notes.append(f"prf: lexical expansion skipped: {skip}")
        elif "bm25" in fp.runs:
            query_terms = list(tokenizer.asked_terms(reads, fp.query))
            terms = self._prf_terms(fp, query_terms, feedback, tokenizer)
            if terms:
                text = expansion_query(fp.query, len(query_terms), terms)
                lang = reads.code_of(text)
                read = with_terms(fp.live.bm25, reads, text)  # the exact scores read it again
                runs["prf_bm25"] = fp.live.bm25.search(text, r.bm25_top_k, fp.allowed, lang=lang, **read)
                probes["prf_bm25"] = text
            else:
                notes.append("prf: no expansion terms in the feedback documents")
        ids = np.array([h.id for h in feedback], dtype=np.int64)
        ids = ids[fp.live.dense.contains(ids)]  # on a partial version, the embedded ones (coverage.py)
        if "dense" in fp.runs and len(ids):
            q = self.embedder.embed_queries([fp.query])[0] if fp.query_vector is None else fp.query_vector
            vectors = fp.live.dense.vectors(ids)
            probes["prf_dense"] = rocchio(q, vectors)
            runs["prf_dense"] = fp.live.dense.search(probes["prf_dense"], r.dense_top_k, fp.allowed)
        queries = tuple(t for t, _ in term_repetitions(terms))
        return Expansion(runs, queries=queries, notes=tuple(notes), probes=probes)

    def _prf_terms(
        self, fp: FirstPass, query_terms: Sequence[str], feedback_hits: Sequence[Hit], tokenizer: Tokenizer
    ) -> list[tuple[str, float]]:
        """RM3 terms of the feedback documents, idf over every first-pass hit (the pool)."""
        pool_ids = sorted({h.id for hits in fp.runs.values() for h in hits})
        docs = fp.chunk_terms(pool_ids, tokenizer)
        feedback = [(docs[h.id], h.score) for h in feedback_hits if h.id in docs]
        if not feedback:
            return []

        key = tokenizer.cache_key()
        known = self._stable
        if len(known) > STABLE_MEMO_LIMIT:
            known.clear()

        def stable(term: str) -> bool:
            # only a term that tokenizes back to itself reaches the index unchanged as query text;
            # remembered: each check detects the term's language (a fastText call)
            found = known.get((key, term))
            if found is None:
                found = known[(key, term)] = tokenizer.tokenize(term) == [term]
            return found

        return select_expansion_terms(
            [doc for doc, _ in feedback],
            [docs[i] for i in pool_ids if i in docs],
            self.expansion.prf_terms,
            exclude=set(query_terms),
            doc_weights=[score for _, score in feedback],
            keep=stable,
        )

    def _hyde(self, fp: FirstPass, generator: Generator) -> Expansion:
        e = self.expansion
        if "dense" not in fp.runs:
            return _skipped("hyde", "hyde searches the dense index, which this query does not use")
        answer = generator.generate(e.hyde_prompt.format(query=fp.query), max_tokens=e.hyde_max_tokens)
        passage = truncate_tokens(answer.strip(), e.hyde_max_tokens, self.encoding)
        if not passage.strip():
            return _skipped("hyde", "the generator returned an empty passage")
        vector = self.embedder.embed_passages([passage])[0]
        hits = fp.live.dense.search(vector, self.retrieval.dense_top_k, fp.allowed)
        replace = e.hyde_replace_query and bool(hits)
        notes = (
            ("hyde found nothing: the first-pass dense list is kept",)
            if e.hyde_replace_query and not hits
            else ()
        )
        return Expansion(
            {"hyde": hits}, replace_dense=replace, queries=(passage,), notes=notes, probes={"hyde": vector}
        )

    def _multi_query(self, fp: FirstPass, generator: Generator) -> Expansion:
        n, r = self.expansion.multi_query_n, self.retrieval
        prompt = MULTI_QUERY_PROMPT.format(n=n, query=fp.query)
        variants = parse_variants(
            generator.generate(prompt, max_tokens=MULTI_QUERY_TOKENS_PER_VARIANT * n), fp.query, n
        )
        if not variants:
            return _skipped("multi_query", "the generator returned no usable rewrites")
        runs: dict[str, list[Hit]] = {}
        probes: dict[str, np.ndarray | str] = {}
        if "dense" in fp.runs:
            vectors = self.embedder.embed_queries(variants)
            for i, vector in enumerate(vectors, start=1):
                probes[f"mq{i}_dense"] = vector
                runs[f"mq{i}_dense"] = fp.live.dense.search(vector, r.dense_top_k, fp.allowed)
        if "bm25" in fp.runs:
            for i, variant in enumerate(variants, start=1):
                probes[f"mq{i}_bm25"] = variant
                lang = fp.reads.code_of(variant)
                runs[f"mq{i}_bm25"] = fp.live.bm25.search(variant, r.bm25_top_k, fp.allowed, lang=lang)
        return Expansion(runs, queries=tuple(variants), probes=probes)

    def _tokenizer_for(self, live: LiveIndex) -> Tokenizer:
        """The live BM25 index's own tokenizer when it has one (already loaded), else ours."""
        tokenizer = live.bm25.tokenizer if isinstance(live.bm25, OwnTokenizer) else None
        return tokenizer if isinstance(tokenizer, Tokenizer) else self._tokenizer


def lexical_skip_reason(
    query: str,
    first_pass: Mapping[str, Sequence[Hit]],
    tokenizer: Tokenizer,
    known_terms: Callable[[Sequence[str]], Sequence[str]] | None = None,
    *,
    lang: str | None = None,
) -> str | None:
    """Why RM3 must not run for ``query``, or None. Its terms come from the feedback documents
    and are searched with the question's own, so it cannot help where BM25 cannot read the
    question: its own BM25 list is empty, or its language (``lang``: the caller's or the one
    decided for the question; None: detected) is not
    among the index's (under ``MIN_SHARE`` of its chunks) and most of its terms are not in the
    index (``known_terms``): a short question misdetected ("faiss index" reads as French) whose
    words the index holds is still expanded. An undetermined question, and an index whose
    languages are not known, are expanded. Where it ran, a Russian question over English
    paragraphs got the dense top 5's English terms as its BM25 query, fused as evidence: the
    hybrid fell below its dense stage (RESULTS.md#beside-the-frameworks)."""
    if "bm25" not in first_pass:
        return None
    if not first_pass["bm25"]:
        return "the question's own BM25 list is empty"
    present = tokenizer.index_languages if tokenizer.languages else {}
    total = sum(present.values())
    if not total or known_terms is None:
        return None
    lang = lang or query_language(query).code
    if lang == UNDETERMINED or present.get(lang, 0) >= MIN_SHARE * total:
        return None
    terms = tokenizer.tokenize_query(query, lang)
    known = len(known_terms(terms))
    if not terms or known >= KNOWN_TERMS_MIN_SHARE * len(terms):
        return None
    major = sorted((c for c, n in present.items() if n >= MIN_SHARE * total), key=lambda c: (-present[c], c))
    return (
        f"the question's language ({lang}) is not among the index's ({', '.join(major)}) "
        f"and {len(terms) - known} of its {len(terms)} terms are not in the index"
    )


def merge_expansions(parts: Sequence[Expansion]) -> Expansion:
    """One Expansion with every part's runs, queries, notes and probes (run names are distinct)."""
    if len(parts) == 1:
        return parts[0]
    return Expansion(
        runs={name: hits for part in parts for name, hits in part.runs.items()},
        replace_dense=any(part.replace_dense for part in parts),
        queries=tuple(q for part in parts for q in part.queries),
        notes=tuple(n for part in parts for n in part.notes),
        probes={name: probe for part in parts for name, probe in part.probes.items()},
    )


def _skipped(name: str, reason: str) -> Expansion:
    return Expansion(notes=(f"expansion skipped ({name}): {reason}",))
