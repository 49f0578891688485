"""At a small budget the context's confidence describes the quoted lines, not everything retrieved
(a weak-evidence flag when the quotes are weak though the retrieval was not), and a budget too small
for any quote names the smallest one that quotes something (the CLI: that message, exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from context_cases import EMBED, ingested, query_result, scored_chunk

from hybrid_rag.cli import main
from hybrid_rag.context import ContextBuilder
from hybrid_rag.context.selfcheck import confidence, kept_confidence
from hybrid_rag.settings import Settings

QUERY = "reactor coolant pressure"
# the answer is one long line (over the quote cap); the second result has none of the terms
ANSWER = "the reactor coolant pressure " + "holds steady while the valve " * 40
OTHER = "violin sonata\norchestra concerto\nmelody rhythm tempo"


def builder(**overrides: object) -> ContextBuilder:
    cfg = Settings().with_overrides({f"context.{k}": v for k, v in overrides.items()})
    return ContextBuilder(cfg.context, EMBED)


def test_the_confidence_is_the_quoted_lines_not_the_retrieved_chunks() -> None:
    result = query_result(QUERY, scored_chunk(1, ANSWER, 0.9, 0.8), scored_chunk(2, OTHER, 0.5, 0.1))
    retrieved = confidence(result, QUERY)
    assert retrieved >= 0.5  # every term, a close dense match: strong as retrieved
    ctx = builder(quote_max_tokens=40).build(QUERY, result, 150)
    assert [q.chunk_id for q in ctx.quotes] == [2]  # the answer's one line does not fit a quote
    kept = kept_confidence(result, QUERY, {q.chunk_id: q.text for q in ctx.quotes})
    assert ctx.confidence == pytest.approx(kept) and ctx.confidence < 0.25 <= retrieved
    assert ctx.weak_evidence and "(weak" in ctx.render()
    assert any("quoted lines are weak evidence" in n for n in ctx.notes)


def test_when_the_answer_is_quoted_the_confidence_is_the_retrievals() -> None:
    result = query_result(QUERY, scored_chunk(1, REACTOR_LINES, 0.9, 0.8), scored_chunk(2, OTHER, 0.5, 0.1))
    ctx = builder().build(QUERY, result, 3000)
    assert ctx.confidence == pytest.approx(confidence(result, QUERY)) and not ctx.weak_evidence


REACTOR_LINES = "reactor coolant\npressure valve"


def test_a_budget_too_small_for_any_quote_names_the_smallest_that_quotes_one() -> None:
    result = query_result(QUERY, scored_chunk(1, REACTOR_LINES, 0.9, 0.8))
    b = builder()
    tiny = b.build(QUERY, result, 10)
    assert not tiny.quotes and tiny.needed_tokens is not None
    assert b.build(QUERY, result, tiny.needed_tokens).quotes
    assert not b.build(QUERY, result, tiny.needed_tokens - 1).quotes
    assert tiny.to_dict()["needed_tokens"] == tiny.needed_tokens
    assert b.build(QUERY, result, 3000).needed_tokens is None


def test_the_cli_says_the_budget_is_too_small_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "plant.md").write_text("# Plant\n\nThe reactor coolant pressure holds steady.\n")
    ingested(tmp_path, root).close()
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    capsys.readouterr()
    code = main(["--data-dir", str(tmp_path / "data"), "context", QUERY, "--max-tokens", "10"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "a budget of 10 tokens is too small for any evidence: the smallest that quotes one is" in err
