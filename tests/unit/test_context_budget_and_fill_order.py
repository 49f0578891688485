"""The token budget holds under any context settings and any generator; the fill order gives every
topic its cheapest fitting quote before any topic a second, and its best line when every window is
over its share; summaries are cut between words; a tiny budget keeps the no-results note."""

from __future__ import annotations

import numpy as np
import pytest
from context_cases import EMBED, REACTOR, VIOLIN, scored_chunk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_rag.context import ContextBuilder
from hybrid_rag.context import evidence as ev
from hybrid_rag.context.budget import Filler
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, Trace


class _Chatty:
    def __init__(self, text: str, fail: bool) -> None:
        self.text, self.fail = text, fail

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        if self.fail:
            raise ConnectionError("down")
        return self.text


_WORDS = st.sampled_from(["alpha", "beta", "def", "class", "x()", "é", "語", "{", "#", "-", ".", "\t", "  "])


_LINES = st.lists(st.lists(_WORDS, max_size=14).map(" ".join), min_size=1, max_size=20)


@st.composite
def _case(draw: st.DrawFn) -> tuple[ContextBuilder, QueryResult, int]:
    overrides = {
        "context.quote_max_tokens": draw(st.integers(1, 500)),
        "context.summary_max_tokens": draw(st.integers(1, 120)),
        "context.summary_sentences": draw(st.integers(1, 4)),
        "context.max_clusters": draw(st.integers(1, 8)),
        "context.max_embedded_units": draw(st.integers(1, 64)),
        "context.seed": draw(st.integers(0, 2**16)),
    }
    generator = None
    if draw(st.booleans()):
        generator = _Chatty(" ".join(draw(st.lists(_WORDS, max_size=400))), draw(st.booleans()))
    builder = ContextBuilder(
        (Settings().with_overrides(overrides)).context, FakeEmbedder(dimension=12).embed_passages, generator
    )
    chunks = []
    for i in range(draw(st.integers(0, 12))):
        lines = draw(_LINES)
        start = draw(st.integers(1, 300))
        code = draw(st.booleans())
        chunks.append(
            ScoredChunk(
                Chunk(
                    i + 1,
                    i + 1,
                    f"f{i % 4}.py",
                    i,
                    start,
                    start + len(lines) - 1,
                    "\n".join(lines),
                    1,
                    f"{i:064x}",
                    SourceType.CODE if code else SourceType.TEXT,
                    "python" if code else "text",
                    "d",
                ),
                draw(st.floats(0, 1)),
                {"dense": draw(st.floats(-1, 1))},
            )
        )
    result = QueryResult("alpha beta", "hybrid", tuple(chunks), Trace())
    return builder, result, draw(st.integers(1, 3000))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case(), query=st.text(max_size=30))
def test_budget_holds_under_any_context_settings_and_any_generator(case, query):
    builder, result, budget = case
    ctx = builder.build(query, result, budget)
    assert count_tokens(ctx.render()) == ctx.token_count <= budget
    for q in ctx.quotes:  # quotes stay exact lines of their chunk, whatever the settings
        chunk = next(c.chunk for c in result.chunks if c.id == q.chunk_id)
        lines = chunk.text.split("\n")
        assert q.text == "\n".join(lines[q.start_line - chunk.start_line : q.end_line - chunk.start_line + 1])
    for t in ctx.clusters:
        assert count_tokens(t.summary) <= builder.cfg.summary_max_tokens


def _two_topics() -> QueryResult:
    texts = [REACTOR, REACTOR + " alpha", VIOLIN, VIOLIN + " violin"]
    return QueryResult(
        "reactor coolant and violin sonata",
        "hybrid",
        tuple(
            ScoredChunk(
                Chunk(i + 1, i + 1, f"doc{i}.txt", 0, 1, 1, t, 8, f"{i:064x}", SourceType.TEXT, "text", "d"),
                1.0 - 0.1 * i,
                {},
            )
            for i, t in enumerate(texts)
        ),
        Trace(),
    )


@pytest.mark.parametrize("words", range(1, 40))
def test_a_summary_is_kept_whole_when_it_fits_and_cut_between_words_when_it_does_not(words):
    limit = 12
    reply = " ".join(f"word{n}" for n in range(words))
    cfg = Settings().with_overrides({"context.summary_max_tokens": limit})
    ctx = ContextBuilder(
        cfg.context, FakeEmbedder(dimension=16).embed_passages, _Chatty(reply, fail=False)
    ).build("reactor coolant and violin sonata", _two_topics(), 3000)
    summaries = [t.summary for t in ctx.clusters]
    assert summaries, "every topic should be shown within 3000 tokens"
    for summary in summaries:
        if count_tokens(reply) <= limit:
            assert summary == reply
        else:
            assert count_tokens(summary) <= limit
            assert summary.endswith(" …") and reply.startswith(summary[:-2])


def _filler(costs: list[list[int]], scores: list[list[float]], labels: list[int], budget: int) -> Filler:
    chunks = [
        scored_chunk(i + 1, "\n".join("x" * len(costs[i])), path=f"f{i}.txt") for i in range(len(costs))
    ]
    return Filler(
        chunks,
        [np.array(s) for s in scores],
        np.array(labels),
        costs,
        [10] * len(costs),
        heading_cost=2,
        summary_cost={},
        fixed_cost=0,
        budget=budget,
        quote_max_tokens=400,
    )


def test_every_topic_gets_its_cheapest_fitting_quote_before_any_topic_gets_a_second():
    """Topic A's two best chunks are single 60-token lines (over the 40-token share); its third
    is a 10-token line that answers nearly as well. Topic B's three chunks are 10-token lines. In
    rank order A0 B0 A1 B1 A2 B2."""
    labels = [0, 1, 0, 1, 0, 1]
    costs = [[60], [10], [60], [10], [10], [10]]
    scores = [[0.9], [0.7], [0.8], [0.6], [0.6], [0.5]]
    filler = _filler(costs, scores, labels, budget=130)
    assert filler.share == 40
    plan = filler.fill()
    firsts = [labels[key] for kind, key, _ in plan.log if kind == "quote"][:2]
    assert sorted(firsts) == [0, 1], "both topics are quoted before either gets a second quote"
    assert 4 in plan.windows and 1 in plan.windows  # A's cheap chunk and B's best
    assert 0 not in plan.windows  # A's 60-token line did not take B's room
    assert filler.used <= filler.budget


def test_a_cheap_line_that_matches_far_less_does_not_open_a_topic_whose_answer_fits():
    """As above, but A's cheap line matches a third as well as its best (below half of it): A
    opens with its best line, which the budget holds, and B gets the room that is left."""
    labels = [0, 1, 0, 1, 0, 1]
    costs = [[60], [10], [60], [10], [10], [10]]
    scores = [[0.9], [0.7], [0.8], [0.6], [0.3], [0.5]]
    plan = _filler(costs, scores, labels, budget=130).fill()
    assert plan.windows[0] == (0, 0) and 4 not in plan.windows
    assert plan.log[0][:2] == ("quote", 0), "the best topic's evidence comes first"


def test_a_topic_whose_lines_are_all_over_its_share_gets_its_best_line_not_a_long_window():
    labels = [0, 1]
    costs = [[50, 45, 45], [10]]
    scores = [[0.9, 0.5, 0.5], [0.7]]
    plan = _filler(costs, scores, labels, budget=40 + 62 + 22 + 20).fill()
    assert plan.windows == {0: (0, 0), 1: (0, 0)}


def test_best_line_takes_the_most_relevant_line_that_fits():
    assert ev.best_line([0.1, 0.9, 0.9, 0.5], [5, 9, 7, 5], 8) == 2
    assert ev.best_line([0.1, 0.9, 0.9, 0.5], [5, 9, 7, 5], 6) == 3
    assert ev.best_line([0.9, 0.0], [5, 1], 100, blocked=[True, False]) is None


@pytest.mark.parametrize("budget", range(12, 24))
def test_with_no_results_a_tiny_budget_keeps_the_no_results_note(budget):
    empty = QueryResult("anything at all", "hybrid", (), Trace())
    ctx = ContextBuilder(Settings().context, EMBED).build(empty.query, empty, budget)
    assert ctx.token_count == count_tokens(ctx.render()) <= budget
    assert "no results were retrieved" in ctx.notes
    if ctx.render():
        assert "Note: no results were retrieved" in ctx.render()
    if budget >= 16:
        assert ctx.render()


def test_when_the_budget_holds_one_first_quote_it_goes_to_the_best_topic():
    """Room for one first quote (22 tokens each, 30 left): the best topic's, not the last topic's
    (the room kept for later topics' first quotes must not starve the first)."""
    filler = _filler([[10], [10]], [[0.9], [0.5]], [0, 1], budget=40 + 30)
    assert filler.fill().windows == {0: (0, 0)}


def test_the_room_kept_for_later_topics_is_only_what_they_can_all_have():
    filler = _filler([[10], [10], [10]], [[0.9], [0.5], [0.4]], [0, 1, 2], budget=40 + 50)
    assert filler.fill().windows == {0: (0, 0), 1: (0, 0)}
