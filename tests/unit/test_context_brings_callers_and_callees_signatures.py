"""``context.edges: signatures``: a question about one definition gets its callers' and callees'
signatures in the context, within the budget (``context/edges.py``, ``symbols/edges.py``), on the
small real projects of the reference tests (Python and Go); off by default, and nothing for a
question that names no definition or several."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from context_cases import ingested

from hybrid_rag.context.edges import heading, interleaved
from hybrid_rag.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "references"
TAKE_PY = (
    "called by: def run(q: str) -> list[str] (pkg/app.py:6-9)",
    "calls: def open(self) -> int (pkg/pool.py:8-9)",
)


def engine_of(tmp_path_factory: pytest.TempPathFactory, language: str, **overrides: object):
    tmp = tmp_path_factory.mktemp(language)
    root = tmp / language
    shutil.copytree(FIXTURES / language, root)
    return ingested(tmp, root, **overrides)


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory):
    engine = engine_of(tmp_path_factory, "python")
    yield engine
    engine.close()


def test_a_method_question_gets_its_caller_and_callee_signatures(python) -> None:
    ctx = python.context("what does ConnectionPool.take do?", edges="signatures")[0]
    assert ctx.edges_of == "ConnectionPool.take"
    assert ctx.edges == TAKE_PY
    text = ctx.render()
    assert heading("ConnectionPool.take") in text
    assert text.index(heading("ConnectionPool.take")) < text.index("## Sources")
    assert ctx.to_dict()["edges"] == list(TAKE_PY)


def test_off_by_default_and_per_call(python) -> None:
    plain = python.context("what does ConnectionPool.take do?")[0]
    assert plain.edges == () and "Callers and callees" not in plain.render()
    assert python.context("what does ConnectionPool.take do?", edges="off")[0].edges == ()
    with pytest.raises(InputError, match="off or signatures"):
        python.context("what does ConnectionPool.take do?", edges="graph")


@pytest.mark.parametrize(
    "question", ["how is a pool of connections used?", "does `run` call parse_filter()?"]
)
def test_no_edges_unless_the_question_names_one_definition(python, question: str) -> None:
    assert python.context(question, edges="signatures")[0].edges == ()


@pytest.mark.parametrize("budget", range(100, 200, 10))
def test_the_edges_stay_within_the_budget_and_keep_the_evidence(python, budget: int) -> None:
    ctx = python.context("what does ConnectionPool.take do?", max_tokens=budget, edges="signatures")[0]
    bare = python.context("what does ConnectionPool.take do?", max_tokens=budget)[0]
    assert ctx.token_count <= budget
    assert ctx.edges == TAKE_PY[: len(ctx.edges)]  # the caller first, then the callee
    assert bool(ctx.quotes) == bool(bare.quotes)  # never the evidence traded for an edge


def test_a_roomy_budget_shows_every_edge(python) -> None:
    assert (
        python.context("what does ConnectionPool.take do?", max_tokens=400, edges="signatures")[0].edges
        == TAKE_PY
    )


def test_a_go_method_from_a_setting(tmp_path_factory: pytest.TempPathFactory) -> None:
    engine = engine_of(tmp_path_factory, "go", **{"context.edges": "signatures"})
    try:
        ctx = engine.context("what does ConnectionPool.Take do?")[0]
    finally:
        engine.close()
    assert ctx.edges == (
        "called by: func run(q string) []string (app/main.go:5-9)",
        "calls: func (p *ConnectionPool) open() int (pool/pool.go:18-20)",
    )


def test_callers_and_callees_alternate() -> None:
    assert interleaved(["called by: a", "called by: b"], ["calls: c"]) == [
        "called by: a",
        "calls: c",
        "called by: b",
    ]
