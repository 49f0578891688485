"""Filters at their limits answer correctly or refuse in one line: deep nesting, thousands of
terms, numbers beyond a column's range (each of these was a traceback)."""

from __future__ import annotations

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.filters import INT64, MAX_DEPTH, parse_filter


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    notes = {f"n{i}.md": f"# note {i}\n\nsoil clay number {i}\n" + "x\n" * i for i in range(6)}
    with engine_over(write_tree(tmp_path_factory.mktemp("limits") / "docs", notes)) as eng:
        yield eng


def names(engine: Engine, text: str) -> set[str]:
    ids = engine.store.chunk_ids_matching(parse_filter(text))
    return {c.path.rsplit("/", 1)[-1] for c in engine.store.chunks(ids).values()}


def test_thousands_of_or_terms_on_one_field_answer_correctly(engine: Engine) -> None:
    paths = sorted(d.path for d in engine.store.documents())
    terms = [f"path='{p}'" for p in paths[:2]] + [f"path=/nowhere/{i}" for i in range(5000)]
    assert names(engine, " or ".join(terms)) == {"n0.md", "n1.md"}


def test_long_chains_of_mixed_terms_answer_correctly(engine: Engine) -> None:
    assert names(engine, " and ".join(f"size > {i}" for i in range(3000))) == set()
    assert names(engine, " and ".join(f"size >= {i}" for i in range(3))) == {f"n{i}.md" for i in range(6)}
    chain = " or ".join(f"(start_line = {i} and path ~ 'n*')" for i in range(3000))
    assert names(engine, chain) == {f"n{i}.md" for i in range(6)}
    wide = "path in (" + ", ".join(f"x{i}" for i in range(40_000)) + ", n3.md)"
    assert names(engine, wide) == set()  # paths are absolute: a bare name matches nothing
    assert names(engine, " or ".join(f"meta.k = v{i}" for i in range(3000))) == set()


@pytest.mark.parametrize("text", ["not " * 5000 + "size > 1", "(" * 5000, "(" * 5000 + "size>1" + ")" * 5000])
def test_deep_nesting_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels") as err:
        parse_filter(text)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_nesting_within_the_limit_is_fine(engine: Engine) -> None:
    text = "not " * (MAX_DEPTH - 1) + "size < 0"
    assert names(engine, text) == {f"n{i}.md" for i in range(6)}  # an odd count of not: all


@pytest.mark.parametrize(
    "text",
    [
        "size > 99999999999999999999999",
        "start_line in (99999999999999999999999)",
        f"token_count < {INT64[0] - 1}",
    ],
)
def test_numbers_beyond_an_integer_column_name_the_value(text: str) -> None:
    with pytest.raises(InputError, match="out of range"):
        parse_filter(text)


def test_the_largest_integer_still_works(engine: Engine) -> None:
    assert names(engine, f"size < {INT64[1]}") == {f"n{i}.md" for i in range(6)}
    assert names(engine, "meta.k > 99999999999999999999999") == set()  # metadata numbers are JSON numbers


def test_or_chains_of_dates_are_not_merged_into_in(engine: Engine) -> None:
    """A date's ``=`` is a whole day, and dates take no ``in``: an ``or`` of them stays an ``or``."""
    chain = " or ".join(f"ingested_at = 20{y:02d}-01-01" for y in range(0, 60)) + " or size >= 0"
    assert names(engine, chain) == {f"n{i}.md" for i in range(6)}
