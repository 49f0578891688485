"""Text becomes BM25 terms through one chain: ``lang/analyzers.Analyzer.terms``, whether the
tokenizer reads languages or not, and for the context's ``content_terms`` too. The analysis
without languages keeps what it always made (unspaced runs whole, no bigrams)."""

from __future__ import annotations

import pytest

from hybrid_rag.lang import analyzers
from hybrid_rag.lang.tokenize import Tokenizer, content_terms


@pytest.fixture
def chain_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    terms = analyzers.Analyzer.terms

    def counted(self: analyzers.Analyzer, raw: str) -> tuple[str, ...]:
        calls.append(raw)
        return terms(self, raw)

    monkeypatch.setattr(analyzers.Analyzer, "terms", counted)
    return calls


@pytest.mark.parametrize("languages", [False, True])
def test_the_tokenizer_asks_the_analyzer_for_every_token(chain_calls: list[str], languages: bool) -> None:
    tokenizer = Tokenizer(kind="regex", stemmer="english", languages=languages)
    assert tokenizer.tokenize("parseHttpRequests quickly", "en") == [
        "parsehttprequest",
        "pars",
        "http",
        "request",
        "quick",
    ]
    assert {"parseHttpRequests", "quickly"} <= set(chain_calls)


def test_content_terms_ask_the_analyzer_too(chain_calls: list[str]) -> None:
    assert content_terms("Where is parseHttpRequest 数据库 defined?") == [
        "parsehttprequest", "parse", "http", "request", "数据库", "defined"
    ]  # fmt: skip
    assert "parseHttpRequest" in chain_calls


@pytest.mark.parametrize(
    ("text", "stemmer", "expected"),
    [
        ("getFileName(path)", "none", ["getfilename", "file", "path"]),  # get, name: spaCy stop words
        ("HTTPServer2 the running", "english", ["httpserver2", "http", "server", "2", "run"]),
        ("数据库 table", "none", ["数据库", "table"]),  # no languages: an unspaced run stays one word
        ("self.get_file_name -> x", "none", ["self", "get_file_name", "file", "x"]),
    ],
)
def test_the_analysis_without_languages_keeps_its_terms(text: str, stemmer: str, expected: list[str]) -> None:
    assert Tokenizer(kind="regex", stemmer=stemmer).tokenize(text) == expected  # type: ignore[arg-type]
