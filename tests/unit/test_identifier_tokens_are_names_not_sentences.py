"""Which words of a question may name a definition (``retrieval/symbol_ranking.py``): every word that looks
like code, and a plain word only when it is the question's one content word; a plain sentence
(cosqa's "how to flatten a list in python") names nothing, so its ranking is left as it was."""

from __future__ import annotations

import pytest

from hybrid_rag.retrieval.symbol_ranking import identifier_tokens


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("Where is ConnectionPool used by parse_filter()?", ["ConnectionPool", "parse_filter"]),
        ("ClientOptions.compression", ["ClientOptions.compression"]),
        ("what does Builder::new do?", ["Builder::new"]),
        ("call `run` twice", ["run"]),
        ("where is chunked defined?", ["chunked"]),
        ("show me the implementation of Context", ["Context"]),
        ("How do you create a new Parser instance?", ["Parser"]),
        ("how to flatten a list in python", []),
        ("python check if file exists", []),
        ("", []),
    ],
)
def test_names_in_a_question(query: str, names: list[str]) -> None:
    assert [t.text for t in identifier_tokens(query)] == names


def test_a_plain_word_matches_only_its_exact_name() -> None:
    (token,) = identifier_tokens("where is chunked defined?")
    assert not token.code
    (token,) = identifier_tokens("where is parse_filter defined?")
    assert token.code
