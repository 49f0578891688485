"""A filter has a cost limit: too many distinct globs, too many glob characters or too many terms are
refused before any work, in one line naming the setting; within the limits it answers."""

from __future__ import annotations

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.filters import parse_filter
from hybrid_rag.filters.cost import META_TERM_COST, check_cost, cost_of


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    notes = {f"n{i}.md": f"# note {i}\n\nsoil clay number {i}\n" for i in range(3)}
    with engine_over(write_tree(tmp_path_factory.mktemp("cost") / "docs", notes)) as eng:
        yield eng


def test_the_cost_counts_terms_distinct_globs_and_their_characters() -> None:
    cost = cost_of(parse_filter("path ~ 'a*' or path ~ 'a*' or (size in (1, 2, 3) and meta.x ~ '**b')"))
    # an in-list of 3: one term; a meta. comparison: META_TERM_COST terms
    assert (cost.terms, cost.globs, cost.glob_chars) == (3 + META_TERM_COST, 2, 2 + 3)
    assert cost_of(parse_filter("path ~ 'a****'")).glob_chars == len("a**")  # runs of stars collapse


def test_four_thousand_ored_globs_are_refused_naming_the_limit(engine: Engine) -> None:
    text = " or ".join(f"path ~ '**/{i}*x'" for i in range(4000))
    with pytest.raises(
        InputError, match=r"4000 distinct globs, over retrieval.filter_max_globs \(64\)"
    ) as err:
        engine.query("soil", filters=text)
    assert "\n" not in str(err.value)


def test_a_long_glob_is_refused_naming_the_limit(engine: Engine) -> None:
    with pytest.raises(InputError, match=r"retrieval.filter_max_glob_chars \(4096\)"):
        engine.query("soil", filters="path ~ '" + "a?" * 3000 + "'")


def test_too_many_terms_are_refused_naming_the_limit() -> None:
    expr = parse_filter("size in (" + ", ".join(map(str, range(5000))) + ")")
    with pytest.raises(InputError, match=r"50 terms, over retrieval.filter_max_terms \(10\)"):
        check_cost(expr, max_terms=10, max_globs=1, max_glob_chars=1)


def test_the_same_glob_many_times_costs_one_and_answers(engine: Engine) -> None:
    text = " or ".join(f"(start_line = {i} and path ~ 'n*')" for i in range(2000))
    result = engine.query("soil clay", filters=text, top_k=5)
    assert {c.path.rsplit("/", 1)[-1] for c in result.chunks} == {"n0.md", "n1.md", "n2.md"}
