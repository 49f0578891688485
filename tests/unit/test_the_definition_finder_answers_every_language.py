"""The one definition finder (``code/definitions.py``) per language: its units are what the symbol
index stores and where the chunker cuts; with the grammar missing it answers nothing and the
chunker falls back to the column-0 rule (Python to its ``ast`` tree); a piece of text with no
file around it gets the finder's line rule."""

from __future__ import annotations

import pytest

from hybrid_rag.code import extract
from hybrid_rag.code.cuts import definition_cuts, heuristic_cuts
from hybrid_rag.code.definitions import definition_lines, find_definitions
from hybrid_rag.code.grammars import grammar_for_path, load
from hybrid_rag.symbols.extract import file_symbols
from hybrid_rag.types import LoadedFile, SourceType

# path, language, text, the qualified names its units have, the 0-based line of the last definition
SAMPLES = {
    "python": (
        "m.py",
        'import os\n\n\nclass Pool:\n    """A pool."""\n\n    def take(self):\n        return 1\n\n\n'
        "def helper():\n    return Pool().take()\n",
        ["Pool", "Pool.take", "helper"],
        10,
    ),
    "go": (
        "m.go",
        "package pool\n\ntype Pool struct{}\n\nfunc (p *Pool) Take() int {\n\treturn 1\n}\n\n"
        "func Helper() int {\n\treturn 2\n}\n",
        ["pool.Pool", "pool.Pool.Take", "pool.Helper"],
        8,
    ),
    "rust": (
        "m.rs",
        "struct Pool;\n\nimpl Pool {\n    fn take(&self) -> i32 {\n        1\n    }\n}\n\n"
        "fn helper() -> i32 {\n    2\n}\n",
        ["Pool", "Pool", "Pool::take", "helper"],
        8,
    ),
    "javascript": (
        "m.js",
        "class Pool {\n  take() {\n    return 1;\n  }\n}\n\nfunction helper() {\n  return 2;\n}\n",
        ["Pool", "Pool.take", "helper"],
        6,
    ),
    "java": (
        "Pool.java",
        "package a.b;\n\npublic class Pool {\n    public int take() {\n        return 1;\n    }\n}\n",
        ["a.b.Pool", "a.b.Pool.take"],
        3,
    ),
    "ruby": (
        "m.rb",
        "class Pool\n  def take\n    1\n  end\nend\n\ndef helper\n  2\nend\n",
        ["Pool", "Pool::take", "helper"],
        6,
    ),
}


def _file(path: str, language: str, text: str) -> LoadedFile:
    return LoadedFile(f"/src/{path}", text, "0" * 64, len(text), 0.0, SourceType.CODE, language)


def _grammar(path: str) -> None:
    grammar = grammar_for_path(path)
    if grammar is None or load(grammar.name) is None:
        pytest.skip(f"no grammar installed for {path}")


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_the_finder_gives_the_units_symbols_and_cuts_of_one_parse(language: str) -> None:
    path, text, names, last = SAMPLES[language]
    _grammar(path)
    file = _file(path, language, text)
    found = find_definitions(file.path, text, language)
    assert [u.qualified_name for u in found.units or ()] == names
    assert found.definition_units is found.units
    assert [s.qualified_name for s in file_symbols(file, found)] == names
    top, nested = definition_cuts(text.split("\n"), language, file.path, found)
    assert last in top | nested


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_without_its_grammar_the_finder_falls_back(language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path, text, names, _ = SAMPLES[language]
    monkeypatch.setattr(extract, "load", lambda name: None)  # as when no grammar wheel is installed
    file = _file(path, language, text)
    found = find_definitions(file.path, text, language)
    assert found.units is None
    lines = text.split("\n")
    cuts = definition_cuts(lines, language, file.path, found)
    if language == "python":  # the ast tree answers: the same cuts and names
        assert [s.qualified_name for s in file_symbols(file, found)] == names
        assert cuts[0] == {0, 3, 10}
    else:
        assert file_symbols(file, found) == []
        assert cuts == heuristic_cuts(lines, language)


def test_a_language_without_a_grammar_is_cut_by_the_column_0_rule() -> None:
    text = "CREATE TABLE a (x int);\n\nCREATE VIEW b AS SELECT 1;\n"
    found = find_definitions("/src/schema.sql", text, "sql")
    assert found.units is None and found.definition_units is None
    lines = text.split("\n")
    assert definition_cuts(lines, "sql", "/src/schema.sql", found) == heuristic_cuts(lines, "sql")


def test_text_without_a_file_gets_the_line_rule() -> None:
    brace = ["/** Take one. */", "public int take() {", "  return 1;", "}"]
    rules = definition_lines(brace)
    assert rules.braces and rules.opens(brace[1]) and rules.attached(brace[0])
    plain = ["@cached", "def take(self):", "    return 1"]
    rules = definition_lines(plain)
    assert not rules.braces and rules.opens(plain[1]) and rules.attached(plain[0])
    assert not rules.opens("    return take(1)")
