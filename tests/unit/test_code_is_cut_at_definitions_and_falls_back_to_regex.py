"""Code chunks and embedding windows follow the definitions; no grammar, or a failed parse, falls
back to the regular-expression path without losing a line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hybrid_rag.code import extract, grammars
from hybrid_rag.code.cuts import heuristic_cuts, unit_cuts
from hybrid_rag.code.definition_windows import definition_window_texts
from hybrid_rag.code.extract import extract_units
from hybrid_rag.ingest.chunking import chunk_text
from hybrid_rag.settings import ChunkingSettings
from hybrid_rag.types import SourceType

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"
SMALL = ChunkingSettings(min_tokens=20, max_tokens=70, overlap=0.0)
BROKEN_RUST = """/// Half a file: the rest was cut off.
pub struct Pool {
    idle: Vec<u32>,
}

impl Pool {
    pub fn take(&mut self) -> u32 {
        match self.idle.pop() { Some(x) => x, None => {{{{ (((( [[[[ ]]] ))
    let = = = ;; fn fn fn <<<< >>>> :: :: @@ $$ %% ^^ && || !! ~~
    #[[[ ]]]] struct enum impl for for for while loop match match
"""


def _words(text: str) -> list[str]:
    return text.split()


def test_java_chunks_start_at_a_definition_with_its_doc_comment() -> None:
    text = (FIXTURES / "Pool.java").read_text(encoding="utf-8")
    spans = chunk_text(text, SourceType.CODE, "java", SMALL)
    assert [(s.start_line, s.end_line) for s in spans] == [(1, 3), (5, 13), (15, 26), (28, 30)]
    assert spans[2].text.lstrip().startswith("/**\n     * Takes a connection")  # the doc comes along


def test_a_methods_window_is_headed_by_its_class_and_holds_its_doc_comment() -> None:
    text = (FIXTURES / "Pool.java").read_text(encoding="utf-8")
    offsets = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
    windows = definition_window_texts(text, offsets, window=40, overlap=4, min_tokens=8, scopes=True)
    take = [w for w in windows if "Takes a connection" in w]
    assert take and take[0].startswith("public class ConnectionPool {\n/**\n")
    cpp = (FIXTURES / "pool.cpp").read_text(encoding="utf-8")
    offsets = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", cpp)]
    windows = definition_window_texts(cpp, offsets, window=40, overlap=4, min_tokens=8, scopes=True)
    assert any(
        w.startswith("/// Takes a connection, opening one when none is idle.\nint ConnectionPool::take()")
        for w in windows
    )


def test_rust_units_give_the_top_level_and_nested_cuts() -> None:
    lines = (FIXTURES / "pool.rs").read_text(encoding="utf-8").split("\n")
    cuts = unit_cuts(lines, "rust")
    assert cuts is not None
    top, nested = cuts
    assert {4, 10, 22, 27} <= top  # struct (from its ///), impl, trait, enum; 0-based
    assert {11, 16} <= nested  # the two methods, each from its doc comment


def test_a_file_the_grammar_cannot_parse_falls_back_without_losing_text() -> None:
    assert extract_units("src/pool.rs", BROKEN_RUST) is None
    lines = BROKEN_RUST.split("\n")
    assert unit_cuts(lines, "rust") is None
    spans = chunk_text(BROKEN_RUST, SourceType.CODE, "rust", SMALL)
    assert spans
    covered = set()
    for span in spans:
        covered.update(range(span.start_line, span.end_line + 1))
    assert {i + 1 for i, line in enumerate(lines) if line.strip()} <= covered


@pytest.mark.parametrize("path", ["notes/todo.xyz", "schema.sql", "Makefile", "README"])
def test_a_file_of_no_grammar_gets_no_units(path: str) -> None:
    assert extract_units(path, "function f() return 1 end\n") is None


def test_without_the_grammar_wheels_code_is_cut_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (FIXTURES / "pool.go").read_text(encoding="utf-8")
    with_units = chunk_text(text, SourceType.CODE, "go", SMALL)
    monkeypatch.setattr(extract, "load", lambda name: None)  # as if tree-sitter were not installed
    assert extract_units("pool.go", text) is None
    without = chunk_text(text, SourceType.CODE, "go", SMALL)
    assert _words("\n".join(s.text for s in without)) == _words(text)
    assert heuristic_cuts(text.split("\n"), "go")[0]  # the regex path found the definitions itself
    assert _words("\n".join(s.text for s in with_units)) == _words(text)


def test_every_grammar_loads_with_the_installed_tree_sitter() -> None:
    assert [g.name for g in grammars.GRAMMARS if grammars.load(g.name) is None] == []


def test_a_macro_the_grammar_cannot_read_costs_only_its_own_tokens() -> None:
    header = (
        "#include <cstdint>\nFMT_BEGIN_NAMESPACE\nnamespace detail {\n/// Counts leading zeros.\n"
        "inline int clz(uint32_t x) { return __builtin_clz(x); }\n}\n/// A stream buffer.\n"
        "class formatbuf : public std::streambuf {\n public:\n  int sync() override { return 0; }\n};\n"
        "FMT_END_NAMESPACE\n"
    )
    units = extract_units("fmt/format.h", header)
    assert units is not None
    assert [(u.qualified_name, u.start_line, u.doc) for u in units] == [
        ("clz", 4, "Counts leading zeros."),
        ("formatbuf", 7, "A stream buffer."),
        ("formatbuf::sync", 10, ""),
    ]


def test_an_extractor_error_falls_back_instead_of_losing_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (FIXTURES / "Pool.java").read_text(encoding="utf-8")

    def broken(*args: object) -> list[object]:
        raise RuntimeError("a bug in the extractor")

    monkeypatch.setattr(extract, "_units", broken)
    assert extract_units("Pool.java", text) is None
    spans = chunk_text(text, SourceType.CODE, "java", SMALL, path="Pool.java")
    assert _words("\n".join(s.text for s in spans)) == _words(text)
