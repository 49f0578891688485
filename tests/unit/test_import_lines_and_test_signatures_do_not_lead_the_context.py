"""``context.quote_imports: false``: import lines (plain, ``from``, and a parenthesised list) are not
evidence units, so a quote is chosen for the lines that answer; ``context.heading_tests: false``: a
topic's extractive heading is a test's signature only when the topic has nothing else."""

from __future__ import annotations

from context_cases import EMBED, query_result, scored_chunk

from hybrid_rag.context import ContextBuilder
from hybrid_rag.context import evidence as ev
from hybrid_rag.context import summaries as sm
from hybrid_rag.settings import ContextSettings

IMPORTS = [
    "import os",
    "from collections import (",
    "    OrderedDict,",
    "    defaultdict,",
    ")",
    "from fusion import rank_order",
    "",
    "def rank_order(scores):",
    "    return sorted(scores, key=lambda item: (-item[1], item[0]))",
]


def test_import_lines_are_found_with_their_parenthesised_continuation() -> None:
    assert ev.import_lines(IMPORTS) == {0, 1, 2, 3, 4, 5}
    assert ev.import_lines(["important = 1", "from_x = 2", "    import json"]) == {2}


def test_without_imports_no_import_line_is_a_unit() -> None:
    kept = [u.first for u in ev.code_units(0, IMPORTS, imports=False)]
    every = [u.first for u in ev.code_units(0, IMPORTS)]
    assert kept == [7, 8]
    assert every == [0, 1, 2, 3, 5, 7, 8]


def test_a_test_signature_heads_a_topic_only_when_it_has_no_other() -> None:
    units = [
        ev.Unit(0, 0, 0, "def test_ties_break_by_id():", True),
        ev.Unit(1, 0, 0, "def rank_order(scores):", True),
    ]
    code = [True, True]
    assert sm.candidates(units, [0, 1], code, tests=False) == [1]
    assert sm.candidates(units, [0, 1], code) == [0, 1]
    assert sm.candidates(units, [0], code, tests=False) == [0]


def test_the_built_context_quotes_the_definition_not_the_imports() -> None:
    text = "\n".join(IMPORTS)
    chunk = scored_chunk(1, text, path="src/fusion.py", code=True)
    query = "from import collections os rank order scores"
    cfg = ContextSettings(quote_max_tokens=30, quote_imports=False)
    context = ContextBuilder(cfg, EMBED).build(query, query_result(query, chunk), max_tokens=120)
    first = context.quotes[0]
    assert first.start_line >= 8 and "rank_order" in first.text
