"""ContextBuilder: retrieval results → topics, summaries and exact, cited quotes within a token budget.

``build`` runs four steps:

1. **analyse**: embed the chunks, the query and up to ``max_embedded_units`` sentences / code
   lines in one call; score every line of every chunk against the query (``evidence``); group
   the chunks into topics with seeded MiniBatchKMeans.
2. **summarise** each topic (``summaries``): map-reduced through the Generator when one is given
   (the note of a generator failure goes to the Context's notes and to its trace), else
   extractive, written from the topic's own quotes as the budget is filled (the quoted sentences
   and signatures that match the question best).
3. **fill** the budget by priority (``budget.Filler``): one quote a topic (best topic first),
   then the summaries, then the topics' next chunks round-robin, then longer windows for quoted
   chunks. Each quote is the contiguous run of lines that fits its share holding the line that
   matches the question best (then the highest total), cut on line boundaries and never inside a
   statement (a sentence, a code statement whose brackets are open: one longer than
   ``quote_max_tokens`` excepted), never overlapping another quote of the same file.
4. **verify**: the whole rendered text is counted with ``hybrid_rag.tokens``; while it is over
   the budget the last step is taken back, then what is left is offered again against the
   exact count. If not even the header fits, its most important note alone, and failing that
   an empty text, stands in. ``render()`` never exceeds the budget.

The confidence shown describes what the context kept, not what was retrieved: the lower of the
retrieval's confidence (the self-check's verdict on the kept attempt when ``checked`` is given: it
judges a retry against the original question; else ``selfcheck.confidence`` of the result) and
``selfcheck.kept_confidence`` of the quoted lines. Evidence is weak when the retrieval was, or when
that confidence is below ``context.confidence_threshold``; a note says when only the quotes are.
When results were retrieved but no quote fits the budget, ``Context.needed_tokens`` is the
smallest budget that quotes one (found by trying budgets on the same analysis).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

import hybrid_rag.context.evidence as ev
import hybrid_rag.context.notes as nt
import hybrid_rag.context.summaries as sm
from hybrid_rag.context.answer_gap import GAP_CAP, Quoted, answer_gap
from hybrid_rag.context.budget import NOTE_RESERVE, Filler, Plan
from hybrid_rag.context.fragments import Cuts
from hybrid_rag.context.render import (
    Context,
    Quote,
    Source,
    Topic,
    mark_cuts,
    prose_line,
    render_context,
    topic_heading,
    with_locator,
)
from hybrid_rag.context.selfcheck import DENSE_CEIL, DENSE_FLOOR, Checked, confidence, kept_confidence
from hybrid_rag.errors import InputError
from hybrid_rag.lang.query import query_language
from hybrid_rag.lang.tokenize import content_terms
from hybrid_rag.lang.windows import term_overlap
from hybrid_rag.locators import quote_locator
from hybrid_rag.protocols import Embedder, Generator
from hybrid_rag.settings import ContextSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.embedding_cache import embed_missing
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import QueryResult, ScoredChunk, SourceType, StageTiming
from hybrid_rag.vectors import pool_windows

EmbedFn = Callable[[Sequence[str]], np.ndarray]
NO_CUTS: Cuts = (False, False)
MAX_PROBE = 1 << 16  # tokens: the largest budget tried for the smallest one that quotes any evidence


def _one_row(embedder: Embedder, texts: Sequence[str]) -> list[np.ndarray]:
    return [row[None, :] for row in embedder.embed_passages(texts)]


def cached_embed(embedder: Embedder, store: MetadataStore) -> EmbedFn:
    """``embedder.embed_passages`` that takes the vectors of stored chunk texts from the store's
    embedding cache (keyed by model and the text's sha256) and embeds only the rest (not cached)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, embedder.dimension), dtype=np.float32)
        shas = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        windows, _ = embed_missing(store, embedder, dict(zip(shas, texts, strict=True)), embed=_one_row)
        return np.vstack([pool_windows(windows[sha]) for sha in shas]).astype(np.float32)

    return embed


@dataclass(frozen=True)
class _Framing:
    """What frames the quotes: the question, the self-check's confidence, whether it is weak, and
    the context's notes (a list the build appends to)."""

    query: str
    conf: float
    weak: bool
    notes: list[str]


@dataclass(frozen=True)
class _Analysis:
    lines: list[list[str]]
    scores: list[np.ndarray]
    labels: np.ndarray
    generated: dict[int, str]  # the generator's summaries, by topic (the others: from the quotes)
    cuts: list[Cuts]  # per chunk: a piece of an over-long line cut before / after (``fragments``)
    units: list[ev.Unit]
    relevance: list[float]  # per unit: its match with the question (``evidence.relevance``)
    reach: list[list[int]]  # per chunk: ``evidence.statement_reach`` of its lines
    lead: list[list[float]]  # per chunk: ``evidence.statement_leads`` of its lines
    code: list[bool]  # per chunk: whether it is code
    lang: str = "und"  # the question's language: units, quotes and evidence are read in it


class ContextBuilder:
    """Builds a cited ``Context`` from a QueryResult; see the module docstring for the steps."""

    def __init__(
        self,
        settings: ContextSettings,
        embed: EmbedFn,
        generator: Generator | None = None,
        *,
        encoding: str = "cl100k_base",
        cosines: Callable[[], tuple[float, float]] | None = None,
    ) -> None:
        """``cosines``: the dense model's ``selfcheck.cosine_range`` (asked at each build: an
        ``auto`` model is chosen at the first ingest); MiniLM's when not given."""
        self.cfg = settings
        self.cosines = cosines or (lambda: (DENSE_FLOOR, DENSE_CEIL))
        self.embed = embed
        self.generator = generator
        self.encoding = encoding  # chunking.encoding: the budget counts as the chunker does
        self.summarizer = sm.Summarizer(self.cfg, generator, self.count)

    def count(self, text: str) -> int:
        return count_tokens(text, self.encoding)

    def build(
        self,
        query: str,
        result: QueryResult,
        max_tokens: int | None = None,
        *,
        checked: Checked | None = None,
        fragments: Mapping[int, Cuts] | None = None,
        lang: str | None = None,
    ) -> Context:
        """The context of ``result`` within ``max_tokens`` (default ``context.max_context_tokens``).

        ``checked``: the self-check that kept ``result``; its confidence and weak verdict are the
        Context's. ``fragments``: ``fragments.fragment_cuts`` of the chunks, to mark quoted pieces
        of over-long lines (without it they are quoted unmarked). ``lang``: the question's
        language, decided once with the query (``lang/query.py``; None: detected here)."""
        lang = lang or query_language(query).code  # units are read in the question's language too
        start = time.perf_counter()
        budget = self.cfg.max_context_tokens if max_tokens is None else max_tokens
        if budget <= 0:
            raise InputError(f"the context budget must be a positive number of tokens, got {budget}")
        if checked is not None:
            conf, weak = checked.confidence, checked.weak
        else:
            conf = confidence(result, query, cosines=self.cosines(), lang=lang)
            weak = conf < self.cfg.confidence_threshold
        chunks = result.chunks
        notes: list[str] = []
        if result.trace.unread:  # the index cannot read the question (retrieval/reading.py): say so
            notes.append(result.trace.unread)
            weak = True
        if result.trace.vectors:  # the second vector set answered (retrieval/second_set.py): say which
            model = result.trace.vectors
            notes.append(f"found with the second vector set ({model}): the index's model cannot read it")
        analysis = filler = None
        framing = _Framing(query, conf, weak, notes)  # notes: the same list, appended to below
        summarized = sm.Summaries()
        if not chunks:
            notes.append("no results were retrieved")
        else:
            analysis, summarized = self._analyse(query, chunks, fragments or {}, lang)
            if summarized.note:
                notes.append(summarized.note)
            filler = self._fill(partial(self._filler, framing, chunks, analysis, budget))
        context = self._finish(framing, result, analysis, filler, budget)
        return replace(context, result=_traced(result, start, summarized))

    # -- analyse -------------------------------------------------------------------------------

    def _analyse(
        self, query: str, chunks: Sequence[ScoredChunk], fragments: Mapping[int, Cuts], lang: str
    ) -> tuple[_Analysis, sm.Summaries]:
        lines = [c.text.split("\n") for c in chunks]
        units: list[ev.Unit] = []
        for i, c in enumerate(chunks):
            if c.source_type is SourceType.CODE:
                units.extend(ev.code_units(i, lines[i], imports=self.cfg.quote_imports))
            else:
                units.extend(ev.prose_units(i, lines[i]))
        query_terms = set(content_terms(query, lang))
        picked = ev.pick_units(units, query_terms, self.cfg.max_embedded_units, lang=lang)
        vectors = np.asarray(
            self.embed([c.text for c in chunks] + [query] + [units[j].text for j in picked]), dtype=np.float64
        )
        n = len(chunks)
        chunk_vecs, query_vec, unit_vecs = vectors[:n], vectors[n], vectors[n + 1 :]
        cosine = dict(zip(picked, (unit_vecs @ query_vec).tolist(), strict=True))
        per_chunk: list[list[tuple[ev.Unit, float]]] = [[] for _ in chunks]
        relevance = []
        for j, unit in enumerate(units):
            overlap = term_overlap(query_terms, content_terms(unit.text, lang))
            relevance.append(ev.relevance(cosine.get(j, 0.0), overlap, bool(query_terms)))
            per_chunk[unit.chunk].append((unit, relevance[-1]))
        scores = [ev.line_scores(len(lines[i]), lines[i], per_chunk[i]) for i in range(n)]
        code = [c.source_type is SourceType.CODE for c in chunks]
        statements = [ev.code_statements(lines[i]) if code[i] else [] for i in range(n)]
        spans = [[(u.first, u.last) for u, _ in per_chunk[i]] + statements[i] for i in range(n)]
        reach = [ev.statement_reach(len(lines[i]), spans[i]) for i in range(n)]
        lead = [ev.statement_leads(len(lines[i]), per_chunk[i], statements[i]) for i in range(n)]
        k = ev.cluster_count(n, self.cfg.max_clusters)
        labels = ev.cluster_labels(chunk_vecs, k, self.cfg.seed)
        summaries = self.summarizer.summarize(query, chunks, labels)
        cuts = [fragments.get(c.id, NO_CUTS) for c in chunks]
        analysis = _Analysis(
            lines, scores, labels, summaries.texts, cuts, units, relevance, reach, lead, code, lang
        )
        return analysis, summaries

    def summary(self, a: _Analysis, topic: int, windows: Mapping[int, tuple[int, int]]) -> str:
        """Topic ``topic``'s summary: the generator's, else drawn from its quoted ``windows``."""
        if topic in a.generated:
            return a.generated[topic]
        return self.summarizer.from_quotes(topic, windows, a.units, a.relevance, a.code, a.labels.tolist())

    # -- fill ------------------------------------------------------------------------------------

    @staticmethod
    def _fill(filler_for: Callable[[int], Filler]) -> Filler:
        """A filled plan from ``filler_for(note_reserve)`` (``_filler`` with its arguments bound);
        when room kept for the fill's notes leaves no quote, planned again without it (the notes
        shrink or go before the evidence does)."""
        filler = filler_for(NOTE_RESERVE)
        filler.fill()
        if not filler.plan.windows:
            bare = filler_for(0)
            bare.fill()
            if bare.plan.windows:
                return bare
        return filler

    def _filler(
        self,
        framing: _Framing,
        chunks: Sequence[ScoredChunk],
        a: _Analysis,
        budget: int,
        note_reserve: int,
    ) -> Filler:
        """Token estimates for every line and quote, handed to the budget planner."""
        query, conf, weak, notes = framing.query, framing.conf, framing.weak, framing.notes
        n = len(chunks)
        code = [c.source_type is SourceType.CODE for c in chunks]
        costs = [
            [self.count(line if code[i] else prose_line(line)) + 1 for line in mark_cuts(lines, *cuts)]
            for i, (lines, cuts) in enumerate(zip(a.lines, a.cuts, strict=True))
        ]
        overhead = [  # "[n] ref" twice (quote, Sources), " (chunk id)", the mark in the heading, fences
            2
            * self.count(
                f"[{n}] {with_locator(c.citation, quote_locator(c.chunk.meta, c.start_line, c.end_line))}"
            )
            + self.count(f" (chunk {c.id})")
            + 4
            + (6 if code[i] else 0)
            for i, c in enumerate(chunks)
        ]
        topics = sorted(set(a.labels.tolist()))
        everything = {i: (0, len(lines) - 1) for i, lines in enumerate(a.lines)}
        estimate = {t: self.summary(a, t, everything) for t in topics}  # as if every line were quoted
        summary_cost = {t: self.count(text) + 2 for t, text in estimate.items() if text}

        def summary_now(t: int, plan: Plan) -> int | None:
            text = self.summary(a, t, plan.windows)
            return self.count(text) + 2 if text else None

        return Filler(
            chunks,
            a.scores,
            a.labels,
            costs,
            overhead,
            heading_cost=self.count(topic_heading(len(topics), "", [])) + 1,
            summary_cost=summary_cost,
            fixed_cost=self.count(
                render_context(query, conf, weak, notes, [], [], [], self.cfg.citation_style)
            ),
            budget=budget,
            quote_max_tokens=self.cfg.quote_max_tokens,
            reach=a.reach,
            lead=a.lead,
            summary_now=summary_now,
            note_reserve=note_reserve,
        )

    # -- verify and assemble ---------------------------------------------------------------------

    def _finish(
        self,
        framing: _Framing,
        result: QueryResult,
        a: _Analysis | None,
        filler: Filler | None,
        budget: int,
        *,
        probe: bool = False,
    ) -> Context:
        """Count the rendered text exactly; take steps back while it is over, then top up.

        ``probe``: only whether a quote fits (no search for the smallest budget that quotes one)."""
        query, conf, weak, notes = framing.query, framing.conf, framing.weak, framing.notes
        chunks = result.chunks
        plan = filler.plan if filler is not None else Plan()
        verdict = (conf, weak)

        def render(plan: Plan) -> tuple[str, tuple[list[str], list[Topic], list[Quote], list[Source]]]:
            """The plan's text with the longest notes that fit the budget (else the shortest)."""
            nonlocal verdict
            for length in nt.LENGTHS:
                held, held_weak, extra = self._kept(query, conf, weak, result, a, plan, length)
                verdict = (held, held_weak)
                all_notes, *rest = self._assemble(notes, chunks, a, plan, budget, length)
                parts = ([*all_notes, *extra], *rest)
                text = render_context(query, held, held_weak, *parts, self.cfg.citation_style)
                if self.count(text) <= budget:
                    break
            return text, parts

        text, parts = render(plan)
        while self.count(text) > budget and plan.undo():
            text, parts = render(plan)
        if filler is not None and self.count(text) <= budget:
            filler.top_up(lambda p: self.count(render(p)[0]))
            text, parts = render(plan)
        tokens = self.count(text)
        all_notes, topics, quotes, sources = parts
        needed = None
        if a is not None and not plan.windows and not probe:
            needed = self._smallest_budget(framing, result, a, budget)
            if needed is not None:
                all_notes = [
                    *all_notes,
                    f"the smallest budget that quotes any evidence is {needed} tokens",
                ]
                text = render_context(
                    query, *verdict, all_notes, topics, quotes, sources, self.cfg.citation_style
                )
                tokens = self.count(text)
        if tokens > budget:
            all_notes = [*all_notes, f"the budget of {budget} tokens is too small for any context"]
            topics, quotes, sources = [], [], []
            text = f"# Context\nNote: {all_notes[-1] if chunks else all_notes[0]}\n"
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
            verdict[0],
            verdict[1],
            tuple(all_notes),
            text,
            result,
            needed,
        )

    def _kept(
        self,
        query: str,
        conf: float,
        weak: bool,
        result: QueryResult,
        a: _Analysis | None,
        plan: Plan,
        length: int = nt.FULL,
    ) -> tuple[float, bool, list[str]]:
        """The confidence and weak verdict of what ``plan`` quotes (module docstring), and the note
        that says when the quotes alone are weak."""
        if a is None:
            return conf, weak, []
        chunks = result.chunks
        kept = {chunks[i].id: "\n".join(a.lines[i][lo : hi + 1]) for i, (lo, hi) in plan.windows.items()}
        held = min(conf, kept_confidence(result, query, kept, cosines=self.cosines(), lang=a.lang))
        held_weak = weak or held < self.cfg.confidence_threshold
        notes: list[str] = []
        if held_weak and not weak and kept:
            notes.append(nt.weak_note(length, conf))
        gap = self._gap(query, result, a, plan, kept)
        if gap is not None:  # quotes that cannot answer, whatever their scores (context/answer_gap.py)
            return min(held, GAP_CAP), True, [*notes, gap]
        return held, held_weak or bool(notes), notes

    def _gap(
        self, query: str, result: QueryResult, a: _Analysis, plan: Plan, kept: Mapping[int, str]
    ) -> str | None:
        """``answer_gap`` of the quoted lines, each with its dense signal on the model's scale."""
        chunks = result.chunks
        floor, ceil = self.cosines()

        def signal(c: ScoredChunk) -> float | None:
            return (c.breakdown["dense"] - floor) / (ceil - floor) if "dense" in c.breakdown else None

        quotes = [
            Quoted(kept[chunks[i].id], a.code[i], chunks[i].chunk.lang, signal(chunks[i]))
            for i in sorted(plan.windows)
        ]
        return answer_gap(query, quotes, lang=a.lang)

    def _smallest_budget(
        self,
        framing: _Framing,
        result: QueryResult,
        a: _Analysis,
        budget: int,
    ) -> int | None:
        """The smallest budget above ``budget`` whose context quotes something (None when even
        ``MAX_PROBE`` tokens quote nothing): doubling, then bisection, on the same analysis."""

        def quotes_at(b: int) -> bool:
            filler = self._fill(partial(self._filler, framing, result.chunks, a, b))
            return bool(self._finish(framing, result, a, filler, b, probe=True).quotes)

        low, high = budget, max(2 * budget, 64)
        while not quotes_at(high):
            if high >= MAX_PROBE:
                return None
            low, high = high, min(2 * high, MAX_PROBE)
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if quotes_at(mid) else (mid, high)
        return high

    def _assemble(
        self,
        notes: list[str],
        chunks: Sequence[ScoredChunk],
        a: _Analysis | None,
        plan: Plan,
        budget: int,
        length: int = nt.FULL,
    ) -> tuple[list[str], list[Topic], list[Quote], list[Source]]:
        """Topics, quotes and sources for the plan, with citation ids by order of appearance, and
        the fill's notes at ``length`` (``notes``)."""
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
                    cut_before, cut_after = a.cuts[i]
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
                            cut_before=cut_before and lo == 0,
                            cut_after=cut_after and hi == len(a.lines[i]) - 1,
                            locator=quote_locator(c.chunk.meta, c.start_line + lo, c.start_line + hi),
                        )
                    )
                summary = self.summary(a, t, plan.windows) if t in plan.summaries else ""
                members = tuple(chunks[i].id for i in range(len(chunks)) if labels[i] == t)
                topics.append(Topic(number, summary, tuple(cited), members))
            missing = sum(1 for t in shown if t not in plan.summaries and self.summary(a, t, plan.windows))
            unquoted = len(chunks) - len(plan.windows)
            all_notes += nt.fill_notes(
                length, missing, unquoted, len(chunks), budget, quoted=bool(plan.windows)
            )
        sources = [
            Source(q.citation, q.chunk_id, q.path, q.start_line, q.end_line, q.locator) for q in quotes
        ]
        return all_notes, topics, quotes, sources


def _traced(result: QueryResult, start: float, summarized: sm.Summaries) -> QueryResult:
    """``result`` with the context's stages in its trace (``context``, and ``summarize`` when a
    generator was asked), and the generator's failure note among its notes."""
    timings = [StageTiming("context", time.perf_counter() - start - summarized.seconds)]
    if summarized.seconds:
        timings.append(StageTiming("summarize", summarized.seconds, summarized.note))
    notes = (summarized.note,) if summarized.note else ()
    timed = result.trace.timings + tuple(timings)
    trace = replace(result.trace, timings=timed, notes=result.trace.notes + notes)
    return replace(result, trace=trace)
