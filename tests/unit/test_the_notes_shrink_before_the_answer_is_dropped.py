"""At a small budget the context spends its tokens on the line that answers, not on notes saying
the budget is full: the fill's notes ("summaries dropped", "results not quoted") shrink to a
short form and then go, before the answer's quote is taken back. The two-file folder of issue 42
(a password-reset section under a backups paragraph, a geometry module): at 120 tokens the
answering sentence used to be left out for the ~40 tokens of notes (it needed 128)."""

from __future__ import annotations

import pytest
from context_cases import ingested
from test_context_quotes_the_lines_that_answer_at_every_budget import ANSWER, GEOMETRY, OPERATIONS, QUESTION

from hybrid_rag.context import notes as nt


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("notes-shrink")
    root = tmp / "docs"
    root.mkdir()
    (root / "operations.md").write_text(OPERATIONS)
    (root / "geometry.py").write_text(GEOMETRY)
    engine = ingested(tmp, root)
    yield engine
    engine.close()


def joined(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines())


@pytest.mark.parametrize("budget", (110, 120, 128))
def test_the_answering_sentence_is_quoted_at_a_hundred_and_twenty_tokens(engine, budget: int) -> None:
    ctx = engine.context(QUESTION, max_tokens=budget)[0]
    assert ctx.token_count <= budget
    assert ctx.quotes, ctx.render()
    assert ctx.quotes[0].path == "operations.md"
    assert ANSWER in joined(ctx.quotes[0].text), ctx.quotes[0].text


def test_the_notes_are_short_or_gone_only_where_the_budget_needs_it(engine) -> None:
    small = engine.context(QUESTION, max_tokens=110)[0]
    roomy = engine.context(QUESTION, max_tokens=400)[0]
    assert all("tokens is full" not in n and "dropped to fit" not in n for n in small.notes)
    big_enough = engine.context(QUESTION, max_tokens=140)[0]  # the answer and the full notes fit
    assert any("results not quoted: the budget of 140 tokens is full" in n for n in big_enough.notes)
    assert len(roomy.quotes) >= len(small.quotes)


def test_the_smallest_budget_named_is_the_answer_without_notes(engine) -> None:
    tiny = engine.context(QUESTION, max_tokens=60)[0]
    assert not tiny.quotes and tiny.needed_tokens is not None
    assert tiny.needed_tokens <= 110
    at_need = engine.context(QUESTION, max_tokens=tiny.needed_tokens)[0]
    assert at_need.quotes and ANSWER in joined(at_need.quotes[0].text)
    assert not engine.context(QUESTION, max_tokens=tiny.needed_tokens - 1)[0].quotes


def test_a_context_without_quotes_always_says_why() -> None:
    why = ["no evidence fits the budget of 50 tokens"]
    for length in nt.LENGTHS:
        assert nt.fill_notes(length, 0, 2, 2, 50, quoted=False) == why
    assert nt.fill_notes(nt.SHORT, 2, 0, 3, 50, quoted=True) == ["2 summaries dropped (budget)"]
    assert nt.fill_notes(nt.NONE, 2, 1, 3, 50, quoted=True) == []
