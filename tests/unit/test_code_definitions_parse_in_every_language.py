"""Each claimed language's small real file parses into the definitions a reader sees in it.

The files are under tests/fixtures/code/; each row is (kind, qualified name, first line, last
line, first line of the doc comment). A unit's lines include its doc comment and attributes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.code.extract import extract_units
from hybrid_rag.code.units import CodeUnit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"

EXPECTED: dict[str, list[tuple[str, str, int, int, str]]] = {
    "Pool.cs": [
        ("namespace", "Example.Db", 3, 21, ""),
        ("class", "Example.Db.ConnectionPool", 5, 15, "A pool of reusable connections."),
        ("method", "Example.Db.ConnectionPool.Take", 10, 14, "Takes a connection, opening one when non"),
        ("interface", "Example.Db.IPool", 17, 20, ""),
        ("method", "Example.Db.IPool.Size", 19, 19, ""),
    ],
    "Pool.java": [
        ("class", "com.example.db.ConnectionPool", 5, 26, "A pool of reusable connections."),
        ("method", "com.example.db.ConnectionPool.ConnectionPool", 11, 13, "Creates an empty pool."),
        ("method", "com.example.db.ConnectionPool.take", 15, 23, "Takes a connection, opening one when non"),
        ("enum", "com.example.db.ConnectionPool.Mode", 25, 25, ""),
        ("interface", "com.example.db.Pool", 28, 30, ""),
        ("method", "com.example.db.Pool.size", 29, 29, ""),
    ],
    "Pool.kt": [
        ("class", "com.example.db.ConnectionPool", 3, 11, "A pool of reusable connections."),
        ("method", "com.example.db.ConnectionPool.take", 7, 10, "Takes a connection, opening one when non"),
        ("function", "com.example.db.createPool", 13, 14, "Creates a pool."),
        ("object", "com.example.db.Defaults", 16, 18, ""),
        ("method", "com.example.db.Defaults.size", 17, 17, ""),
    ],
    "Pool.scala": [
        ("class", "com.example.db.ConnectionPool", 3, 12, "A pool of reusable connections."),
        ("method", "com.example.db.ConnectionPool.take", 7, 11, "Takes a connection, opening one when non"),
        ("trait", "com.example.db.Pool", 14, 17, "What a pool can do."),
        ("object", "com.example.db.ConnectionPool", 19, 21, ""),
        ("method", "com.example.db.ConnectionPool.apply", 20, 20, ""),
    ],
    "Pool.swift": [
        ("class", "ConnectionPool", 3, 11, "A pool of reusable connections."),
        ("method", "ConnectionPool.take", 7, 10, "Takes a connection, opening one when non"),
        ("interface", "Pool", 13, 16, "What a pool can do."),
        ("function", "createPool", 18, 21, "Creates a pool."),
    ],
    "pool.c": [
        ("struct", "pool", 3, 7, "A pool of reusable connections."),
        ("function", "pool_new", 9, 14, "Creates an empty pool."),
        ("function", "pool_take", 16, 19, "Takes a connection, opening one when non"),
    ],
    "pool.cpp": [
        ("namespace", "db", 3, 24, ""),
        ("class", "db::ConnectionPool", 5, 14, "A pool of reusable connections."),
        ("method", "db::ConnectionPool::ConnectionPool", 8, 9, "Creates an empty pool."),
        ("method", "db::ConnectionPool::take", 10, 10, ""),
        ("method", "db::ConnectionPool::take", 16, 22, "Takes a connection, opening one when non"),
    ],
    "pool.go": [
        ("struct", "pool.ConnectionPool", 5, 9, "ConnectionPool keeps reusable connection"),
        ("function", "pool.NewPool", 11, 14, "NewPool creates an empty pool."),
        ("method", "pool.ConnectionPool.Take", 16, 21, "Take takes a connection, opening one whe"),
    ],
    "pool.js": [
        ("class", "ConnectionPool", 1, 13, "A pool of reusable connections."),
        ("method", "ConnectionPool.take", 9, 12, "Takes a connection, opening one when non"),
        ("function", "createPool", 15, 18, "Creates a pool."),
    ],
    "pool.php": [
        ("namespace", "App\\Db", 3, 3, ""),
        ("class", "ConnectionPool", 5, 17, "A pool of reusable connections."),
        ("method", "ConnectionPool::take", 12, 16, "Takes a connection, opening one when non"),
        ("function", "create_pool", 19, 23, "Creates a pool."),
    ],
    "pool.py": [
        ("constant", "DEFAULT_SIZE", 5, 5, ""),
        ("class", "ConnectionPool", 8, 22, "A pool of reusable connections."),
        ("method", "ConnectionPool.__init__", 11, 12, ""),
        ("method", "ConnectionPool.size", 14, 18, "How many connections are idle."),
        ("method", "ConnectionPool.take", 20, 22, "Takes a connection, opening one when non"),
        ("function", "create_pool", 25, 26, ""),
    ],
    "pool.rb": [
        ("class", "ConnectionPool", 1, 11, "A pool of reusable connections."),
        ("method", "ConnectionPool::initialize", 3, 5, ""),
        ("method", "ConnectionPool::take", 7, 10, "Takes a connection, opening one when non"),
        ("module", "Db", 13, 18, ""),
        ("function", "Db::create_pool", 14, 17, "Creates a pool."),
    ],
    "pool.rs": [
        ("struct", "ConnectionPool", 5, 9, "A pool of reusable connections."),
        ("impl", "ConnectionPool", 11, 21, ""),
        ("method", "ConnectionPool::new", 12, 15, "Creates an empty pool."),
        ("method", "ConnectionPool::take", 17, 20, "Takes a connection, opening one when non"),
        ("trait", "Pool", 23, 26, "What a pool can do."),
        ("method", "Pool::size", 25, 25, ""),
        ("enum", "Mode", 28, 31, ""),
    ],
    "pool.sh": [
        ("function", "take_connection", 4, 7, "Takes a connection, opening one when non"),
        ("function", "create_pool", 9, 12, "Creates a pool."),
    ],
    "pool.ts": [
        ("interface", "PoolOptions", 3, 6, "Options of a pool."),
        ("class", "ConnectionPool", 8, 18, "A pool of reusable connections."),
        ("method", "ConnectionPool.take", 14, 17, "Takes a connection, opening one when non"),
        ("function", "createPool", 20, 23, "Creates a pool."),
        ("function", "makePool", 25, 25, ""),
    ],
}


def _units(name: str) -> list[CodeUnit]:
    path = FIXTURES / name
    units = extract_units(str(path), path.read_text(encoding="utf-8"))
    assert units is not None, f"no grammar parsed {name}"
    return units


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_language_file_yields_its_definitions(name: str) -> None:
    got = [
        (u.kind, u.qualified_name, u.start_line, u.end_line, u.doc.split("\n")[0][:40]) for u in _units(name)
    ]
    assert got == EXPECTED[name]


def test_every_fixture_has_a_row() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted(EXPECTED)


def test_signatures_stop_at_the_body() -> None:
    signatures = {u.qualified_name: u.signature for u in _units("pool.rs")}
    assert signatures["ConnectionPool::take"] == "pub fn take(&mut self) -> u32"
    java = {u.qualified_name: u.signature for u in _units("Pool.java")}
    assert java["com.example.db.ConnectionPool.take"] == "public int take()"  # @Override left out
    go = {u.qualified_name: u.signature for u in _units("pool.go")}
    assert go["pool.ConnectionPool.Take"] == "func (p *ConnectionPool) Take() int"
    kotlin = {u.qualified_name: u.signature for u in _units("Pool.kt")}
    assert (
        kotlin["com.example.db.createPool"] == "fun createPool(): ConnectionPool"
    )  # not "= ConnectionPool()"
    ts = {u.qualified_name: u.signature for u in _units("pool.ts")}
    assert ts["makePool"] == "export const makePool = (size: number): ConnectionPool"
    cpp = {(u.qualified_name, u.start_line): u.signature for u in _units("pool.cpp")}
    assert cpp["db::ConnectionPool::take", 16] == "int ConnectionPool::take()"


def test_parents_are_the_enclosing_units() -> None:
    parents = {u.qualified_name: u.parent for u in _units("pool.py")}
    assert parents["ConnectionPool.take"] == "ConnectionPool"
    assert parents["create_pool"] is None
    go = {u.qualified_name: u.parent for u in _units("pool.go")}
    assert go["pool.ConnectionPool.Take"] == "pool.ConnectionPool"  # the receiver's type


def test_doc_comments_lose_their_markers() -> None:
    java = {u.name: u.doc for u in _units("Pool.java")}
    assert java["take"] == "Takes a connection, opening one when none is idle.\n@return the connection id"
    rust = {(u.name, u.kind): u.doc for u in _units("pool.rs")}
    assert (
        rust["ConnectionPool", "struct"] == "A pool of reusable connections."
    )  # //! above belongs to the module
    python = {u.name: u.doc for u in _units("pool.py")}
    assert python["take"] == "Takes a connection, opening one when none is idle."


def test_tsx_and_cpp_headers_parse_with_the_neighbouring_grammar() -> None:
    tsx = "/** A button. */\nexport function Button(): JSX.Element {\n  return <button>ok</button>;\n}\n"
    units = extract_units("ui/Button.tsx", tsx)
    assert units is not None and [(u.name, u.start_line, u.doc) for u in units] == [
        ("Button", 1, "A button.")
    ]
    header = "namespace db {\nclass Pool {\n public:\n  int take();\n};\n}\n"
    units = extract_units("db/pool.h", header)
    assert units is not None and [u.qualified_name for u in units] == ["db", "db::Pool", "db::Pool::take"]
