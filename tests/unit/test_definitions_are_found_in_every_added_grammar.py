"""The grammars added for issue 37 (Elixir, Haskell, Lua, Zig, Dart, OCaml, Julia, Perl,
Objective-C) each parse a small file into the definitions a reader sees in it, and an ingested
repository of those files answers a lookup of each language's definition by name.

The files are under tests/fixtures/grammars/ (SOURCES.md: the pinned package each real one comes
from and its licence); each row is (kind, qualified name, first line, last line). A long real file
is pinned by some of its rows and its count of units.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from engine_fixtures import engine_over

from hybrid_rag.code.extract import extract_units
from hybrid_rag.code.grammars import BY_EXTENSION, GRAMMARS, load
from hybrid_rag.engine import Engine
from hybrid_rag.ingest.loaders import classify

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grammars"
ADDED = ("elixir", "haskell", "lua", "zig", "dart", "ocaml", "ocaml_interface", "julia", "perl", "objc")

Row = tuple[str, str, int, int]
EXPECTED: dict[str, tuple[int, list[Row]]] = {  # file -> (units, rows among them)
    "pool.ex": (
        7,
        [
            ("module", "Db.ConnectionPool", 1, 20),
            ("function", "Db.ConnectionPool.take", 7, 7),
            ("function", "Db.ConnectionPool.take", 8, 8),  # a second clause is a second unit
            ("function", "Db.ConnectionPool.open", 10, 12),
            ("function", "Db.ConnectionPool.with_connection", 14, 19),
            ("module", "Db.Pool", 22, 24),
            ("function", "Db.Pool.size", 23, 23),
        ],
    ),
    "HLint_QuickCheck.hs": (
        13,
        [
            ("type", "Dbl", 28, 28),
            ("type", "Test", 67, 67),
            ("interface", "Testable2", 74, 75),
            ("method", "Testable2.property2", 75, 75),
            ("function", "test", 89, 95),
            ("function", "catcher", 98, 102),
            ("function", "withMain", 107, 111),
        ],
    ),
    "inspect.lua": (
        24,
        [
            ("function", "smartQuote", 36, 43),
            ("function", "processRecursive", 164, 187),
            ("method", "putTable", 238, 292),  # function Inspector:putTable(t)
            ("function", "inspect", 311, 337),
        ],
    ),
    "SplitMix64.zig": (2, [("function", "init", 10, 12), ("function", "next", 14, 21)]),
    "pool.dart": (
        6,
        [
            ("class", "ConnectionPool", 1, 12),
            ("method", "ConnectionPool.take", 8, 11),  # its body is the signature's sibling
            ("class", "Pool", 14, 17),
            ("method", "Pool.size", 16, 16),
            ("enum", "Mode", 19, 19),
            ("function", "createPool", 21, 22),
        ],
    ),
    "stack.ml": (
        16,
        [("type", "t", 16, 16), ("function", "create", 20, 20), ("function", "pop", 28, 31)],
    ),
    "pool.jl": (
        6,
        [
            ("module", "Db", 1, 25),
            ("struct", "Db.ConnectionPool", 4, 6),
            ("type", "Db.Pool", 8, 8),
            ("function", "Db.take!", 15, 17),
            ("function", "Db.newpool", 19, 19),
            ("macro", "Db.withpool", 21, 23),
        ],
    ),
    "SelectSaver.pm": (
        2,
        [("function", "SelectSaver::new", 41, 47), ("function", "SelectSaver::DESTROY", 49, 52)],
    ),
    "EXSessionTaskDelegate.m": (
        8,
        [
            ("impl", "EXSessionTaskDelegate", 5, 58),  # an @implementation
            ("method", "EXSessionTaskDelegate.initWithResolve", 7, 15),
            ("method", "EXSessionTaskDelegate.parseServerResponse", 26, 34),
        ],
    ),
}

WHEELS = ("elixir", "haskell", "lua", "zig", "dart", "ocaml", "julia", "perl", "objc")
pytestmark = pytest.mark.skipif(  # the wheels, not the rows: a missing row fails
    any(importlib.util.find_spec(f"tree_sitter_{w}") is None for w in WHEELS),
    reason="grammar wheels not installed",
)


def test_every_added_grammar_loads_with_the_installed_tree_sitter() -> None:
    assert {g.name for g in GRAMMARS} >= set(ADDED)
    for name in ADDED:
        loaded = load(name)
        assert loaded is not None and loaded.query.pattern_count > 0, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_file_yields_its_definitions(name: str) -> None:
    path = FIXTURES / name
    units = extract_units(str(path), path.read_text(encoding="utf-8"))
    assert units is not None, f"no grammar parsed {name}"
    count, rows = EXPECTED[name]
    got = [(u.kind, u.qualified_name, u.start_line, u.end_line) for u in units]
    assert len(got) == count
    assert [r for r in got if r in rows] == rows  # each, in source order


def test_every_fixture_has_a_row_and_its_grammar_owns_its_extension() -> None:
    files = sorted(p.name for p in FIXTURES.iterdir() if p.suffix != ".md")
    assert files == sorted(EXPECTED)
    for name in files:
        grammar = BY_EXTENSION[Path(name).suffix]
        assert grammar.name in ADDED and grammar.language == classify(name)[1], name


def test_an_ocaml_interface_parses_with_its_own_grammar() -> None:
    text = "(** A stack. *)\ntype 'a t\n\nval push : 'a -> 'a t -> unit\n"
    units = extract_units("stack.mli", text)
    assert units is not None and (units[0].kind, units[0].name) == ("type", "t")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("langs")
    shutil.copytree(FIXTURES, root / "src", ignore=shutil.ignore_patterns("*.md"))
    with engine_over(root / "src") as eng:
        yield eng


@pytest.mark.parametrize(
    ("name", "citation"),
    [
        ("Db.ConnectionPool.open", "pool.ex:10-12"),
        ("withMain", "HLint_QuickCheck.hs:107-111"),
        ("processRecursive", "inspect.lua:164-187"),
        ("next", "SplitMix64.zig:14-21"),
        ("createPool", "pool.dart:21-22"),
        ("pop_opt", "stack.ml:33-36"),
        ("Db.take!", "pool.jl:15-17"),
        ("SelectSaver::DESTROY", "SelectSaver.pm:49-52"),
        ("EXSessionTaskDelegate.parseServerResponse", "EXSessionTaskDelegate.m:26-34"),
    ],
)
def test_an_ingested_definition_is_found_by_name(engine: Engine, name: str, citation: str) -> None:
    found = [m.symbol.citation for m in engine.symbols(name) if m.match == "exact"]
    assert found == [citation]
