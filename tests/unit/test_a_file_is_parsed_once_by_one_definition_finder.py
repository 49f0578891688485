"""Where a definition starts is asked of one finder (``code/definitions.py``), once per file: the
chunker's cuts, the symbols and the references of an ingested file come from one tree-sitter parse
(a Python file's cuts too: no ``ast`` tree beside it when the tree reads cleanly), and no cache
keyed on a file's text hides a second ask."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from engine_fixtures import make_settings

from hybrid_rag.code import definitions as definitions_module
from hybrid_rag.code import extract
from hybrid_rag.engine import Engine
from hybrid_rag.ingest.chunking import chunk_file
from hybrid_rag.settings import ChunkingSettings
from hybrid_rag.symbols.extract import file_references, file_symbols
from hybrid_rag.types import LoadedFile, SourceType

PYTHON = '''import os


class Pool:
    """A pool."""

    def take(self, wait):
        return os.getpid()


def helper():
    return Pool().take(1)
'''
GO = """package pool

type Pool struct{}

func (p *Pool) Take() int {
\treturn 1
}

func Helper() int {
\treturn (&Pool{}).Take()
}
"""


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often a text of this module was parsed: by tree-sitter (``extract._units`` runs once a
    parse) and by ``ast`` (parses of other sources, as libraries import, are not counted)."""
    seen: Counter[str] = Counter()
    ours = (PYTHON[:20], GO[:20])
    units, parse = extract._units, ast.parse

    def counted_units(loaded, root, data):  # type: ignore[no-untyped-def]
        seen["tree-sitter:" + data.decode("utf-8")[:20]] += 1
        return units(loaded, root, data)

    def counted_ast(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(source, str) and source[:20] in ours:
            seen["ast:" + source[:20]] += 1
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(extract, "_units", counted_units)
    monkeypatch.setattr(definitions_module.ast, "parse", counted_ast)
    return seen


def test_ingest_asks_the_finder_once_a_file_and_parses_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: Counter[str]
) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "pool.py").write_text(PYTHON, encoding="utf-8")
    (root / "pool.go").write_text(GO, encoding="utf-8")
    asked: Counter[str] = Counter()
    make = definitions_module.find_definitions

    def counted(path: str, text: str, language: str) -> definitions_module.Definitions:
        asked[Path(path).name] += 1
        return make(path, text, language)

    monkeypatch.setattr(definitions_module, "find_definitions", counted)
    engine = Engine(make_settings(tmp_path))
    try:
        engine.ingest([root])
        names = {m.symbol.qualified_name for m in engine.symbols("take")}
    finally:
        engine.close()
    assert asked == {"pool.py": 1, "pool.go": 1}
    assert parses == {"tree-sitter:" + PYTHON[:20]: 1, "tree-sitter:" + GO[:20]: 1}
    assert {"Pool.take", "Pool.Take"} & names


def test_the_answers_are_those_of_the_parsers_asked_one_by_one(parses: Counter[str]) -> None:
    """Asking the finder changes no answer: cuts, symbols and references as each asked alone."""
    file = LoadedFile("/src/pool.go", GO, "0" * 64, len(GO), 0.0, SourceType.CODE, "go")
    found = definitions_module.find_definitions(file.path, file.text, file.language)
    settings = ChunkingSettings(max_tokens=24, min_tokens=8)
    assert chunk_file(file, settings, found) == chunk_file(file, settings)
    assert file_symbols(file, found) == file_symbols(file)
    assert file_references(file, found) == file_references(file)


def test_no_cache_on_a_files_text_hides_a_second_parse(parses: Counter[str]) -> None:
    extract.parse_path("/src/pool.go", GO)
    extract.parse_path("/src/pool.go", GO)
    assert parses["tree-sitter:" + GO[:20]] == 2
