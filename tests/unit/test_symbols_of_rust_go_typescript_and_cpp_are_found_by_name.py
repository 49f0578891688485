"""What a new user hit looking up definitions in Rust, Go, TypeScript and C++ repositories.

* a method of a generic Rust type is found by its bare path (``Deserializer::end``, not
  ``Deserializer<R>::end``) by the lookup and by the identifier boost of ranking;
* a Go file's outline nests each method under its receiver's type, wherever the type is declared
  (not under the function or interface written just above it), and ``(*Mux).Mount`` is a name;
* zod's ``export const $ZodString = core.$constructor(...)`` is a definition;
* a C++ definition is listed before its header's declaration, and an unknown kind is an error.

The Rust, Go and TypeScript files are ``tests/fixtures/code/de.rs``, ``mux.go`` and ``schemas.ts``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.code.grammars import load
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.retrieval.symbol_ranking import EXACT, symbol_hits
from hybrid_rag.symbols.search import outline_tree

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"
HEADER = "namespace db {\nclass Pool {\n public:\n  /// Takes a connection.\n  int take();\n};\n}\n"
SOURCE = '#include "pool.hpp"\n\nnamespace db {\nint Pool::take() {\n  return 0;\n}\n}\n'

pytestmark = pytest.mark.skipif(
    any(load(g) is None for g in ("rust", "go", "typescript", "cpp")), reason="grammars not installed"
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    copied = {f"src/{name}": (FIXTURES / name).read_bytes() for name in ("de.rs", "mux.go", "schemas.ts")}
    root = write_tree(
        tmp_path_factory.mktemp("repo"), {**copied, "include/pool.hpp": HEADER, "src/pool.cpp": SOURCE}
    )
    with engine_over(root / "src", root / "include") as eng:
        yield eng


def _found(engine: Engine, name: str, **kwargs: object) -> list[tuple[str, str, str]]:
    return [(m.match, m.symbol.qualified_name, m.symbol.citation) for m in engine.symbols(name, **kwargs)]


def test_a_method_of_a_generic_rust_type_is_found_by_its_bare_path(engine: Engine) -> None:
    assert _found(engine, "Deserializer::end") == [("exact", "Deserializer::end", "src/de.rs:11-14")]
    assert _found(engine, "PrettyFormatter::with_indent")[0][2] == "src/de.rs:23-26"
    impl = next(m.symbol for m in engine.symbols("Deserializer", kinds=["impl"]))
    assert impl.signature == "impl<R: Read> Deserializer<R>"  # shown with its generics


def test_the_identifier_boost_finds_the_generic_method(engine: Engine) -> None:
    hits = symbol_hits(engine.store, "where is Deserializer::end defined?", state=None)
    end = engine.symbols("Deserializer::end")[0].symbol
    assert hits[0].id == end.chunk_id and hits[0].score == EXACT  # the name as written, unshared
    struct = engine.symbols("Deserializer", kinds=["struct"])[0].symbol
    hits = symbol_hits(engine.store, "where is Deserializer defined?", state=None)
    assert [(h.id, h.score) for h in hits] == [(struct.chunk_id, EXACT)]  # its impl block shares nothing


def test_a_go_outline_nests_methods_under_their_receivers_type(engine: Engine) -> None:
    entries = engine.outline("src/mux.go")
    fields = [(e.depth, e.symbol.qualified_name) for e in entries if e.symbol.kind == "field"]
    assert fields and all(depth == 1 for depth, _ in fields)  # a struct's fields sit under it
    assert [(e.depth, e.symbol.kind, e.symbol.name) for e in entries if e.symbol.kind != "field"] == [
        (0, "struct", "Mux"),
        (1, "method", "Mount"),
        (0, "interface", "Handler"),
        (0, "function", "NewMux"),
        (0, "interface", "compressFlusher"),
        (0, "struct", "Compressor"),
        (1, "method", "SetEncoder"),  # not under NewCompressor, the function above it
        (0, "function", "NewCompressor"),
        (0, "struct", "compressResponseWriter"),
        (1, "method", "Flush"),  # declared before its type: not under compressFlusher
    ]
    tree = {
        n["name"]: [c["name"] for c in n["children"] if c["kind"] != "field"] for n in outline_tree(entries)
    }
    assert tree["Compressor"] == ["SetEncoder"] and tree["NewCompressor"] == []
    assert tree["compressResponseWriter"] == ["Flush"] and tree["compressFlusher"] == []


def test_go_method_spellings_are_names(engine: Engine) -> None:
    for spelling in ("(*Mux).Mount", "(Mux).Mount", "Mux.Mount", "chi.Mux.Mount"):
        assert _found(engine, spelling) == [("exact", "chi.Mux.Mount", "src/mux.go:18-21")], spelling


def test_an_exported_typescript_constant_is_a_definition(engine: Engine) -> None:
    assert _found(engine, "$ZodString") == [("exact", "$ZodString", "src/schemas.ts:8-14")]
    assert engine.symbols("ZodNumber.check")[0].symbol.parent == "ZodNumber"


def test_a_cpp_definition_is_listed_before_its_declaration(engine: Engine) -> None:
    found = engine.symbols("Pool::take")
    assert [(m.symbol.citation, m.symbol.signature) for m in found] == [
        ("src/pool.cpp:4-6", "int Pool::take()"),
        ("include/pool.hpp:4-5", "int take();"),  # "include/" sorts first by path
    ]


def test_an_unknown_kind_names_the_valid_ones(engine: Engine) -> None:
    with pytest.raises(InputError, match=r"unknown kind 'methd'; valid kinds: class, constant, .*method"):
        engine.symbols("take", kinds=["methd"])
    assert _found(engine, "take", kinds=["Method"])[0][1] == "db::Pool::take"  # any case
