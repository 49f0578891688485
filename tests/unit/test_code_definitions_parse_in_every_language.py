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
    "de.rs": [  # methods of generic types: the bare path (Deserializer::end), not Deserializer<R>::end
        ("struct", "Deserializer", 5, 8, "Reads values from a byte source."),
        ("impl", "Deserializer", 10, 15, ""),
        ("method", "Deserializer::end", 11, 14, "Expects the input to end here."),
        ("struct", "PrettyFormatter", 17, 20, "Writes indented output."),
        ("impl", "PrettyFormatter", 22, 27, ""),
        ("method", "PrettyFormatter::with_indent", 23, 26, "A formatter with the given indent."),
    ],
    "mux.go": [  # methods after a constructor and before their type: qualified by the receiver
        ("struct", "chi.Mux", 3, 6, "Mux routes requests to handlers."),
        ("interface", "chi.Handler", 8, 11, "Handler handles one request."),
        ("function", "chi.NewMux", 13, 16, "NewMux returns an empty router."),
        ("method", "chi.Mux.Mount", 18, 21, "Mount attaches a sub-router under a patt"),
        ("interface", "chi.compressFlusher", 23, 26, "compressFlusher is a writer that can flu"),
        ("method", "chi.compressResponseWriter.Flush", 28, 31, "Flush sends what is buffered (its type i"),
        ("struct", "chi.Compressor", 33, 36, "Compressor picks an encoder per content "),
        ("function", "chi.NewCompressor", 38, 41, "NewCompressor returns a compressor at a "),
        ("method", "chi.Compressor.SetEncoder", 43, 46, "SetEncoder sets the encoder of an encodi"),
        ("struct", "chi.compressResponseWriter", 48, 51, "compressResponseWriter compresses what a"),
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
    "schemas.ts": [  # zod's exported constants built by a call or holding a class are definitions
        ("interface", "$ZodTypeInternals", 3, 6, "What every schema holds."),
        ("constant", "$ZodString", 8, 14, "Validates strings."),
        ("constant", "globalRegistry", 16, 17, "A registry of schemas."),
        ("function", "parse", 19, 20, "Parses with a schema."),
        ("class", "ZodNumber", 22, 27, "A schema class made at run time."),
        ("method", "ZodNumber.check", 24, 26, ""),
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


def test_a_generic_type_is_found_by_its_bare_path_and_shown_with_its_generics() -> None:
    units = {(u.kind, u.qualified_name): u for u in _units("de.rs")}
    end = units["method", "Deserializer::end"]
    assert (end.name, end.parent) == ("end", "Deserializer")
    assert units["impl", "Deserializer"].signature == "impl<R: Read> Deserializer<R>"
    assert units["impl", "PrettyFormatter"].signature == "impl<'a> PrettyFormatter<'a>"
    assert units["struct", "PrettyFormatter"].signature == "pub struct PrettyFormatter<'a>"
    cpp = "template <typename T>\nint Pool<T>::take() {\n  return 0;\n}\n"
    assert [u.qualified_name for u in extract_units("pool.cpp", cpp) or []] == ["Pool::take"]
    operators = "struct S {};\nbool operator<(const S& a, const S& b) {\n  return true;\n}\n"
    assert "operator<" in [u.name for u in extract_units("s.cpp", operators) or []]  # not a generic


def test_exported_constants_are_definitions_in_javascript_too() -> None:
    js = (
        "/** Validates strings. */\n"
        'export const $ZodString = /*@__PURE__*/ core.$constructor("$ZodString", (inst) => {\n'
        "  inst.ok = true;\n"
        "});\n"
        "export const Registry = class {};\n"
        "export const VERSION = 4;\n"
        "const local = make();\n"
    )
    units = extract_units("schemas.js", js) or []
    assert [(u.kind, u.name, u.start_line, u.doc) for u in units] == [
        ("constant", "$ZodString", 1, "Validates strings."),
        ("class", "Registry", 5, ""),
    ]
    assert units[0].signature.startswith("export const $ZodString = core.$constructor(")  # no comment


def test_a_declaration_keeps_its_semicolon_and_a_definition_does_not() -> None:
    cpp = {(u.qualified_name, u.start_line): u.signature for u in _units("pool.cpp")}
    assert cpp["db::ConnectionPool::take", 10] == "int take();"
    assert cpp["db::ConnectionPool::take", 16] == "int ConnectionPool::take()"
    java = {u.qualified_name: u.signature for u in _units("Pool.java")}
    assert java["com.example.db.Pool.size"] == "int size();"  # an interface's method: no body
    assert java["com.example.db.ConnectionPool.take"] == "public int take()"
    header = "int pool_take(struct pool *p,\n              int wait);\n"
    assert [u.signature for u in extract_units("pool.h", header) or []] == [
        "int pool_take(struct pool *p, int wait);"  # its parameters on two lines, both kept
    ]
