"""At every budget the context quotes the lines that answer (chosen by their match with the
question), whole statements (a sentence, a code statement whose brackets are open), and a topic's
summary comes from its own quotes: the two-file folder of a new user's first hour (an operations
page whose "Password resets" section holds the answer, a backups paragraph above it, and a
geometry module) and a cookie example in JavaScript."""

from __future__ import annotations

import pytest
from context_cases import EMBED, ingested, query_result, scored_chunk

from hybrid_rag.context import ContextBuilder
from hybrid_rag.context import evidence as ev
from hybrid_rag.settings import Settings

OPERATIONS = """# Operations

## Backups

Backups run every night at two in the morning and are kept for thirty days. Each backup is
copied to a second region, and once a week one of them is restored into a staging
environment to prove that it can be read back.

## Password resets

A user who forgets a password asks for a new one from the sign-in page, and we send a reset
link by email. The link is valid for fifteen minutes and can be used only once; after that
the user must ask for another link.
"""
GEOMETRY = '''def polygon_area(points):
    """The area of a simple polygon, by the shoelace formula."""
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2
'''
QUESTION = "how long is a password reset link valid?"
ANSWER = " ".join(
    [
        "The link is valid for fifteen minutes and can be used only once;",
        "after that the user must ask for another link.",
    ]
)
BACKUPS = ("Backups run", "copied to a second region", "environment to prove that it can be read back.")
BUDGETS = (60, 120, 200, 400)


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> dict[int, object]:
    tmp = tmp_path_factory.mktemp("first-hour")
    root = tmp / "docs"
    root.mkdir()
    (root / "operations.md").write_text(OPERATIONS)
    (root / "geometry.py").write_text(GEOMETRY)
    engine = ingested(tmp, root)
    try:
        return {b: engine.context(QUESTION, max_tokens=b)[0] for b in (*BUDGETS, 1000)}
    finally:
        engine.close()


def joined(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines())


@pytest.mark.parametrize("budget", BUDGETS)
def test_every_budget_quotes_the_answering_sentence_whole_or_names_the_budget_it_needs(contexts, budget):
    ctx = contexts[budget]
    assert ctx.token_count <= budget
    if not ctx.quotes:  # too small for the answer: nothing else stands in for it
        assert ctx.needed_tokens is not None and ctx.needed_tokens > budget
        assert contexts[max(b for b in contexts if b >= ctx.needed_tokens)].quotes
        return
    first = ctx.quotes[0]
    assert first.path == "operations.md"
    assert ANSWER in joined(first.text), first.text  # the sentence that answers, to its last word


@pytest.mark.parametrize("budget", BUDGETS)
def test_no_budget_quotes_the_backups_paragraph_before_the_answer(contexts, budget) -> None:
    ctx = contexts[budget]
    for q in ctx.quotes:
        if ANSWER not in joined(q.text):
            assert not any(b in q.text for b in BACKUPS), q.text
        if q.path == "operations.md":
            break


@pytest.mark.parametrize("budget", (*BUDGETS, 1000))
def test_a_topic_summary_comes_from_its_own_quotes_and_matches_the_question(contexts, budget) -> None:
    ctx = contexts[budget]
    for topic in ctx.clusters:
        if not topic.summary:
            continue
        quoted = " ".join(joined(ctx.quotes[c - 1].text) for c in topic.citations)
        for sentence in ev.prose_units(0, [topic.summary]):
            assert sentence.text.strip("`;") in quoted or sentence.text in quoted, (topic.summary, quoted)
        assert "polygon_area" not in topic.summary
        assert not any(b in topic.summary for b in BACKUPS), topic.summary


def test_the_answer_fits_by_two_hundred_tokens(contexts) -> None:
    assert ANSWER in joined(contexts[200].quotes[0].text)
    assert contexts[200].clusters[0].summary.startswith("The link is valid for fifteen minutes")


COOKIES = """import Cookies from 'js-cookie'

// a cookie that expires in a day, on this site only
Cookies.set('session', token, {
  path: '/',
  sameSite: 'strict',
  secure: true,
  expires: 1
})

function readSession() {
  return Cookies.get('session')
}
"""


@pytest.mark.parametrize("budget", range(90, 200, 10))
def test_a_code_example_is_never_cut_inside_its_statement(budget: int) -> None:
    query = "how do I set a cookie that expires in a day?"
    result = query_result(query, scored_chunk(1, COOKIES, 0.9, 0.6, path="cookies.js", code=True))
    ctx = ContextBuilder(Settings().context, EMBED).build(query, result, budget)
    lines = COOKIES.split("\n")
    for q in ctx.quotes:
        held = lines[q.start_line - 1 : q.end_line]
        if any(line.startswith("Cookies.set(") for line in held):
            assert "  expires: 1" in held and "})" in held, q.text


def test_code_statements_span_open_brackets_not_blocks() -> None:
    lines = COOKIES.split("\n")
    assert (3, 8) in ev.code_statements(lines)
    assert all(first != 10 for first, _ in ev.code_statements(lines))  # a function's block is not one
