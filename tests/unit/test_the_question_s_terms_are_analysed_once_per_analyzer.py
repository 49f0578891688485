"""A question's terms are analysed once per analyzer the stages need, and kept on the typed query
(``Asked.analysed``, ``lang/query.py``): BM25's tokenizer (its search, its exact scores, the reading
check, the expansion's probes), the content terms (each hit's matching lines), the identifier
tokens (the symbol list) and the question's words (definition first, path match) each read the
question's text at most once in one ``engine.query``. Before, BM25's tokenizer read it 3 times
and the content terms once per returned hit."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.engine import Engine
from hybrid_rag.lang.query import Asked
from hybrid_rag.lang.tokenize import Tokenizer, content_terms
from hybrid_rag.request import Query
from hybrid_rag.retrieval.definition_first import question_words
from hybrid_rag.symbols.question_names import identifier_tokens

QUESTION = "Where is parse_config_file defined and how does the config reader split keys?"

FILES = {
    "src/config/reader.py": (
        "def parse_config_file(path: str) -> dict:\n"
        '    """Read a key=value configuration file into a dictionary."""\n'
        "    result = {}\n"
        "    with open(path) as handle:\n"
        "        for line in handle:\n"
        '            key, _, value = line.partition("=")\n'
        "            result[key.strip()] = value.strip()\n"
        "    return result\n"
    ),
    "src/config/writer.py": (
        "def write_config_file(path: str, values: dict) -> None:\n"
        '    """Write a dictionary as key=value lines."""\n'
        "    with open(path, 'w') as handle:\n"
        "        for key, value in values.items():\n"
        '            handle.write(f"{key}={value}\\n")\n'
    ),
    "docs/config.md": "# Configuration\n\nThe config reader splits each line at the first = into a key.\n",
    "docs/garden.md": "# Garden\n\nCompost improves drainage in heavy clay soil.\n",
}

ANALYZERS = {
    "content_terms": content_terms,
    "identifier_tokens": identifier_tokens,
    "question_words": question_words,
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    root = write_tree(tmp_path_factory.mktemp("terms") / "repo", FILES)
    with engine_over(root) as eng:
        yield eng


def _counting(name: str, analyse: Callable[..., Any], calls: Counter[str]) -> Callable[..., Any]:
    @wraps(analyse)
    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        if text == QUESTION:
            calls[name] += 1
        return analyse(text, *args, **kwargs)

    return counted


@pytest.fixture
def analyses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each analyzer reads the question's own text: the module-level analyzers wherever
    a module of the package imported them, and BM25's tokenizer (a query's terms, and any batch
    of texts holding the question that is not part of reading a query)."""
    calls: Counter[str] = Counter()
    originals = {id(analyse): name for name, analyse in ANALYZERS.items()}
    for module in [m for name, m in list(sys.modules.items()) if name.startswith("hybrid_rag")]:
        for attr, found in list(vars(module).items()):  # under whatever name a module imported it
            if id(found) in originals:
                name = originals[id(found)]
                monkeypatch.setattr(module, attr, _counting(name, found, calls))
    tokenize_query, tokenize_many = Tokenizer.tokenize_query, Tokenizer.tokenize_many
    depth = [0]

    def query_terms(self: Tokenizer, text: str, lang: str | None = None) -> list[str]:
        calls["bm25"] += text == QUESTION
        depth[0] += 1
        try:
            return tokenize_query(self, text, lang)
        finally:
            depth[0] -= 1

    def many(self: Tokenizer, texts: Any, langs: Any = None) -> list[list[str]]:
        calls["bm25"] += not depth[0] and QUESTION in list(texts)
        return tokenize_many(self, texts, langs)

    monkeypatch.setattr(Tokenizer, "tokenize_query", query_terms)
    monkeypatch.setattr(Tokenizer, "tokenize_many", many)
    return calls


def test_one_query_analyses_the_question_once_per_analyzer(engine: Engine, analyses: Counter[str]) -> None:
    # exact scores complete both lists (z-score fusion), PRF expands, the symbol list and the code
    # rules read the question, and every returned hit gets its matching lines
    result = engine.query(Query(QUESTION, top_k=5))
    assert result.chunks and result.matches
    assert any(c.path.endswith("reader.py") for c in result.chunks[:2])
    assert {name: n for name, n in analyses.items() if n > 1} == {}, analyses
    assert analyses["bm25"] == 1 and analyses["content_terms"] == 1, analyses


def test_a_question_s_analyses_are_kept_on_the_question_and_told_apart_by_analyzer() -> None:
    asked = Asked.of(QUESTION, "en")
    runs: list[str] = []

    def read(text: str) -> tuple[str, ...]:
        runs.append(text)
        return tuple(content_terms(text))

    first = asked.analysed("content", read)
    assert asked.analysed("content", read) is first and runs == [QUESTION]
    assert asked.analysed("content", read, "compost drainage") == ("compost", "drainage")
    assert asked.analysed("other analyzer", read) == first and len(runs) == 3
    # a copy of the question is the same question: equal and hashed alike, with or without analyses
    assert asked == Asked.of(QUESTION, "en") and hash(asked) == hash(Asked.of(QUESTION, "en"))


def test_the_memo_is_per_question() -> None:
    one, two = Asked.of(QUESTION, "en"), Asked.of(QUESTION, "en")
    one.analysed("content", lambda text: ("x",))
    assert two.analysed("content", lambda text: ("y",)) == ("y",)
