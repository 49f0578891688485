"""ContextBuilder: retrieval results → topics, summaries and exact, cited quotes within a token budget.

``build`` runs four steps:

1. **analyse**: embed the chunks, the query and up to ``max_embedded_units`` sentences / code
   lines in one call; score every line of every chunk against the query (``evidence``); group
   the chunks into topics with seeded MiniBatchKMeans.
2. **summarise** each topic: extractive (the units closest to the topic's centroid; for code,
   signatures first), or map-reduce through the Generator when one is given (map: one summary a
   topic; reduce: topics stay in order of their best hit). A failing generator falls back to
   extractive summaries with a note.
3. **fill** the budget by priority (``budget.Filler``): each topic's best chunk first (best
   topic first), then the summaries, then the topics' next chunks round-robin, then longer
   windows for quoted chunks. Each quote is the best-scoring contiguous run of lines that fits
   its share, cut on line boundaries, never overlapping another quote of the same file.
4. **verify**: the whole rendered text is counted with ``hybrid_rag.tokens``; while it is over
   the budget the last step is taken back, then what is left is offered again against the
   exact count. If not even the header fits, a one-line note, and failing that an empty text,
   stands in. ``render()`` never exceeds the budget.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_rag.context import evidence as ev
from hybrid_rag.context.budget import Filler, Plan
from hybrid_rag.context.render import Context, Quote, Source, Topic, render_context, topic_heading
from hybrid_rag.context.selfcheck import confidence
from hybrid_rag.errors import InputError
from hybrid_rag.protocols import Embedder, Generator
from hybrid_rag.settings import Settings
from hybrid_rag.store import MetadataStore
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import QueryResult, ScoredChunk, SourceType

EmbedFn = Callable[[Sequence[str]], np.ndarray]
MAP_PROMPT_CHARS = 6000  # how much of a topic's text the generator sees when summarising it
SUMMARY_SYSTEM = (
    "You summarise retrieved passages for a search engine. Reply with one or two plain sentences."
)
SUMMARY_PROMPT = (
    "Question: {query}\n\nPassages:\n{passages}\n\n"
    "In one or two sentences, say what these passages contain that bears on the question."
)


def cached_embed(embedder: Embedder, store: MetadataStore) -> EmbedFn:
    """``embedder.embed_passages`` that takes the vectors of stored chunk texts from the store's
    embedding cache (keyed by model and the text's sha256) and embeds only the rest (not cached)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        shas = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        known = store.cached_embeddings(embedder.model_name, shas) if store.exists else {}
        missing = [i for i, sha in enumerate(shas) if sha not in known]
        fresh = embedder.embed_passages([texts[i] for i in missing]) if missing else None
        rows = [known.get(sha) for sha in shas]
        for j, i in enumerate(missing):
            rows[i] = fresh[j]  # type: ignore[index]
        if not rows:
            return np.zeros((0, embedder.dimension), dtype=np.float32)
        return np.vstack(rows).astype(np.float32)

    return embed


@dataclass(frozen=True)
class _Analysis:
    lines: list[list[str]]
    scores: list[np.ndarray]
    labels: np.ndarray
    summaries: dict[int, str]


class ContextBuilder:
    """Builds a cited ``Context`` from a QueryResult; see the module docstring for the steps."""

    def __init__(self, settings: Settings, embed: EmbedFn, generator: Generator | None = None) -> None:
        self.settings = settings
        self.cfg = settings.context
        self.embed = embed
        self.generator = generator
        self.encoding = settings.chunking.encoding

    def count(self, text: str) -> int:
        return count_tokens(text, self.encoding)

    def build(self, query: str, result: QueryResult, max_tokens: int | None = None) -> Context:
        budget = self.cfg.max_context_tokens if max_tokens is None else max_tokens
        if budget <= 0:
            raise InputError(f"the context budget must be a positive number of tokens, got {budget}")
        conf = confidence(result, query)
        weak = conf < self.cfg.confidence_threshold
        chunks = result.chunks
        notes: list[str] = []
        if not chunks:
            notes.append("no results were retrieved")
            return self._finish(query, conf, weak, notes, chunks, None, None, budget)
        analysis = self._analyse(query, chunks, notes)
        filler = self._filler(query, conf, weak, notes, chunks, analysis, budget)
        filler.fill()
        return self._finish(query, conf, weak, notes, chunks, analysis, filler, budget)

    # -- analyse -------------------------------------------------------------------------------

    def _analyse(self, query: str, chunks: Sequence[ScoredChunk], notes: list[str]) -> _Analysis:
        lines = [c.text.split("\n") for c in chunks]
        units: list[ev.Unit] = []
        for i, c in enumerate(chunks):
            make = ev.code_units if c.source_type is SourceType.CODE else ev.prose_units
            units.extend(make(i, lines[i]))
        query_terms = set(ev.content_terms(query))
        picked = ev.pick_units(units, query_terms, self.cfg.max_embedded_units)
        vectors = np.asarray(
            self.embed([c.text for c in chunks] + [query] + [units[j].text for j in picked]), dtype=np.float64
        )
        n = len(chunks)
        chunk_vecs, query_vec, unit_vecs = vectors[:n], vectors[n], vectors[n + 1 :]
        cosine = dict(zip(picked, (unit_vecs @ query_vec).tolist(), strict=True))
        per_chunk: list[list[tuple[ev.Unit, float]]] = [[] for _ in chunks]
        for j, unit in enumerate(units):
            overlap = ev.term_overlap(query_terms, ev.content_terms(unit.text))
            per_chunk[unit.chunk].append((unit, ev.relevance(cosine.get(j, 0.0), overlap, bool(query_terms))))
        scores = [ev.line_scores(len(lines[i]), lines[i], per_chunk[i]) for i in range(n)]
        k = ev.cluster_count(n, self.cfg.max_clusters)
        labels = ev.cluster_labels(chunk_vecs, k, self.cfg.seed)
        embedded = {j: unit_vecs[p] for p, j in enumerate(picked)}
        summaries = self._summaries(query, chunks, units, embedded, chunk_vecs, labels, notes)
        return _Analysis(lines, scores, labels, summaries)

    def _summaries(
        self,
        query: str,
        chunks: Sequence[ScoredChunk],
        units: Sequence[ev.Unit],
        embedded: dict[int, np.ndarray],
        chunk_vecs: np.ndarray,
        labels: np.ndarray,
        notes: list[str],
    ) -> dict[int, str]:
        topics = sorted(set(labels.tolist()))
        if self.generator is not None:
            try:
                return {t: self._generated_summary(query, chunks, labels, t) for t in topics}
            except Exception as exc:  # any generator failure degrades, it never breaks the context
                notes.append(
                    f"generator failed ({type(exc).__name__}: {_first_line(exc)}); extractive summaries used"
                )
        out = {}
        for t in topics:
            members = np.flatnonzero(labels == t)
            center = ev.centroid(chunk_vecs[members])
            candidates = [j for j in embedded if labels[units[j].chunk] == t]
            if any(units[j].signature for j in candidates):
                candidates = [j for j in candidates if units[j].signature]
            ranked = sorted(candidates, key=lambda j: (-float(embedded[j] @ center), j))
            picked: list[str] = []
            for j in ranked:
                if units[j].text not in picked:
                    picked.append(units[j].text)
                if len(picked) == self.cfg.summary_sentences:
                    break
            code = sum(chunks[i].source_type is SourceType.CODE for i in members) * 2 > len(members)
            text = "; ".join(f"`{p.rstrip(':{ ')}`" for p in picked) if code else " ".join(picked)
            out[t] = self._cut(text)
        return out

    def _generated_summary(
        self, query: str, chunks: Sequence[ScoredChunk], labels: np.ndarray, t: int
    ) -> str:
        assert self.generator is not None
        passages = "\n\n".join(
            f"[{chunks[i].citation}]\n{chunks[i].text}" for i in np.flatnonzero(labels == t)
        )[:MAP_PROMPT_CHARS]
        reply = self.generator.generate(
            SUMMARY_PROMPT.format(query=query, passages=passages),
            system=SUMMARY_SYSTEM,
            max_tokens=self.cfg.summary_max_tokens,
        )
        text = " ".join(str(reply).split())
        if not text:
            raise ValueError("empty summary")
        return self._cut(text)

    def _cut(self, text: str) -> str:
        """At most ``summary_max_tokens`` tokens, cut between words with an ellipsis."""
        limit = self.cfg.summary_max_tokens
        if self.count(text) <= limit:
            return text
        words = text.split(" ")
        lo, hi = 0, len(words)
        while lo < hi:  # the most words that fit with the ellipsis
            mid = (lo + hi + 1) // 2
            if self.count(" ".join(words[:mid]) + " …") <= limit:
                lo = mid
            else:
                hi = mid - 1
        return (" ".join(words[:lo]) + " …") if lo else ""

    # -- fill ------------------------------------------------------------------------------------

    def _filler(
        self,
        query: str,
        conf: float,
        weak: bool,
        notes: list[str],
        chunks: Sequence[ScoredChunk],
        a: _Analysis,
        budget: int,
    ) -> Filler:
        """Token estimates for every line and quote, handed to the budget planner."""
        n = len(chunks)
        code = [c.source_type is SourceType.CODE for c in chunks]
        costs = [[self.count(("" if code[i] else "> ") + line) + 1 for line in a.lines[i]] for i in range(n)]
        overhead = [  # "[n] ref" twice (quote, Sources), " (chunk id)", the mark in the heading, fences
            2 * self.count(f"[{n}] {c.citation}") + self.count(f" (chunk {c.id})") + 4 + (6 if code[i] else 0)
            for i, c in enumerate(chunks)
        ]
        n_topics = len(set(a.labels.tolist()))
        summary_cost = {t: self.count(text) + 2 for t, text in a.summaries.items() if text}
        return Filler(
            chunks,
            a.scores,
            a.labels,
            costs,
            overhead,
            heading_cost=self.count(topic_heading(n_topics, "", [])) + 1,
            summary_cost=summary_cost,
            fixed_cost=self.count(render_context(query, conf, weak, notes, [], [], [])),
            budget=budget,
            quote_max_tokens=self.cfg.quote_max_tokens,
        )

    # -- verify and assemble ---------------------------------------------------------------------

    def _finish(
        self,
        query: str,
        conf: float,
        weak: bool,
        notes: list[str],
        chunks: Sequence[ScoredChunk],
        a: _Analysis | None,
        filler: Filler | None,
        budget: int,
    ) -> Context:
        """Count the rendered text exactly; take steps back while it is over, then top up."""
        plan = filler.plan if filler is not None else Plan()

        def render(plan: Plan) -> tuple[str, tuple[list[str], list[Topic], list[Quote], list[Source]]]:
            parts = self._assemble(notes, chunks, a, plan, budget)
            return render_context(query, conf, weak, *parts), parts

        text, parts = render(plan)
        while self.count(text) > budget and plan.undo():
            text, parts = render(plan)
        if filler is not None and self.count(text) <= budget:
            filler.top_up(lambda p: self.count(render(p)[0]))
            text, parts = render(plan)
        tokens = self.count(text)
        all_notes, topics, quotes, sources = parts
        if tokens > budget:
            all_notes = [*all_notes, f"the budget of {budget} tokens is too small for any context"]
            topics, quotes, sources = [], [], []
            text = f"# Context\nNote: {all_notes[-1]}\n"
            tokens = self.count(text)
            if tokens > budget:
                text, tokens = "", 0
        return Context(
            query,
            tuple(topics),
            tuple(quotes),
            tuple(sources),
            tokens,
            budget,
            conf,
            weak,
            tuple(all_notes),
            text,
        )

    def _assemble(
        self,
        notes: list[str],
        chunks: Sequence[ScoredChunk],
        a: _Analysis | None,
        plan: Plan,
        budget: int,
    ) -> tuple[list[str], list[Topic], list[Quote], list[Source]]:
        """Topics, quotes and sources for the plan, with citation ids by order of appearance."""
        all_notes = list(notes)
        topics: list[Topic] = []
        quotes: list[Quote] = []
        if a is not None:
            labels = a.labels.tolist()
            shown = [t for t in sorted(set(labels)) if any(labels[i] == t for i in plan.windows)]
            for number, t in enumerate(shown, start=1):
                cited = []
                for i in (i for i in range(len(chunks)) if labels[i] == t and i in plan.windows):
                    lo, hi = plan.windows[i]
                    c = chunks[i]
                    cited.append(len(quotes) + 1)
                    quotes.append(
                        Quote(
                            citation=len(quotes) + 1,
                            chunk_id=c.id,
                            path=c.path,
                            start_line=c.start_line + lo,
                            end_line=c.start_line + hi,
                            text="\n".join(a.lines[i][lo : hi + 1]),
                            source_type=c.source_type,
                            language=c.chunk.language,
                            topic=number,
                            relevance=float(a.scores[i][lo : hi + 1].max()),
                        )
                    )
                summary = a.summaries.get(t, "") if t in plan.summaries else ""
                members = tuple(chunks[i].id for i in range(len(chunks)) if labels[i] == t)
                topics.append(Topic(number, summary, tuple(cited), members))
            missing = sum(1 for t in shown if a.summaries.get(t) and t not in plan.summaries)
            if missing:
                all_notes.append(
                    f"summaries of {missing} topic(s) dropped to fit the budget of {budget} tokens"
                )
            unquoted = len(chunks) - len(plan.windows)
            if not plan.windows:
                all_notes.append(f"no evidence fits the budget of {budget} tokens")
            elif unquoted:
                all_notes.append(
                    f"{unquoted} of {len(chunks)} results not quoted: the budget of {budget} tokens is full"
                )
        sources = [Source(q.citation, q.chunk_id, q.path, q.start_line, q.end_line) for q in quotes]
        return all_notes, topics, quotes, sources


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else "no message"
