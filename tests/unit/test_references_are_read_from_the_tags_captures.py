"""A file's references come from the same parse as its units: the grammars' ``@reference``
captures with the overrides beside them. A definition's own name is not a use of it, each use
knows the definition holding it and the qualifier before it, imports name their module, and a
pattern that needs a predicate py-tree-sitter does not check (Ruby's ``#is-not? local``) is left
out rather than making every local variable a call."""

from __future__ import annotations

import textwrap

from hybrid_rag.code.extract import extract_references, extract_units


def _refs(path: str, text: str) -> list[tuple[str, str, int, str, str | None]]:
    text = textwrap.dedent(text)
    units = extract_units(path, text) or []
    found = extract_references(path, text) or []
    return [
        (r.kind, r.name, r.line, r.qualifier, units[r.scope].qualified_name if r.scope is not None else None)
        for r in found
    ]


def test_python_calls_values_imports_and_qualifiers() -> None:
    found = _refs(
        "app.py",
        """\
        from pkg.pool import ConnectionPool as Pool, parse_filter
        import os.path as osp


        class Reader(Base):
            def read(self, handler) -> Result:
                self.close()
                register(handler, parse_filter)
                return osp.join("a")
        """,
    )
    assert ("import", "ConnectionPool", 1, "", None) in found
    assert ("import", "parse_filter", 1, "", None) in found
    assert ("import", "osp", 2, "", None) in found  # the alias is the name the file uses
    assert ("class", "Base", 5, "", "Reader") in found  # a base class is used by its class
    assert ("type", "Result", 6, "", "Reader.read") in found
    assert ("call", "close", 7, "self", "Reader.read") in found
    assert ("name", "parse_filter", 8, "", "Reader.read") in found  # passed on as a value
    assert ("name", "osp", 9, "", "Reader.read") in found  # the module a member call goes through
    assert ("call", "join", 9, "osp", "Reader.read") in found
    assert not [r for r in found if r[1] in {"Reader", "read", "self"}]  # nor is self a use


def test_rust_scoped_calls_types_and_use_lists() -> None:
    found = _refs(
        "main.rs",
        """\
        use crate::pool::{parse_filter, ConnectionPool};

        fn run(q: &str) -> Vec<String> {
            let p = ConnectionPool::new();
            parse_filter(q)
        }
        """,
    )
    assert ("import", "parse_filter", 1, "", None) in found
    assert ("call", "new", 4, "ConnectionPool", "run") in found
    assert ("name", "ConnectionPool", 4, "", "run") in found
    assert ("call", "parse_filter", 5, "", "run") in found
    modules = {r.name: r.module for r in extract_references("main.rs", "use crate::pool::{a, B};\n") or []}
    assert modules == {"a": "crate::pool", "B": "crate::pool"}


def test_ruby_locals_are_not_calls() -> None:
    found = _refs(
        "pool.rb",
        """\
        def take
          count = 1
          puts(count)
          Pool.new(count)
        end
        """,
    )
    names = {(kind, name) for kind, name, *_ in found}
    assert ("call", "puts") in names and ("call", "new") in names and ("type", "Pool") in names
    assert not [n for n in names if n[1] == "count"]  # a local variable, not a method call


def test_go_imports_name_their_package() -> None:
    text = (
        'package main\n\nimport (\n\t"example.com/demo/pool"\n\tfmt "fmt"\n)\n\nfunc run() { pool.Take() }\n'
    )
    found = {(r.kind, r.name, r.module) for r in extract_references("main.go", text) or []}
    assert ("import", "pool", "example.com/demo/pool") in found
    assert ("import", "fmt", "fmt") in found
    assert ("call", "Take", "") in found
