"""A Python file is cut where the tree-sitter parse that gives its symbols says its statements
start (``code/python_starts.py``): the same lines as Python's ``ast`` tree, without a second
parse; ``ast`` decides only where that tree holds an error, and where the grammar is missing."""

from __future__ import annotations

import ast

import pytest

from hybrid_rag.code import definitions as definitions_module
from hybrid_rag.code import extract
from hybrid_rag.code.cuts import definition_cuts, heuristic_cuts
from hybrid_rag.code.definitions import find_definitions
from hybrid_rag.code.grammars import load
from hybrid_rag.code.python_starts import ast_starts, tree_starts
from hybrid_rag.ingest.chunking import chunk_file
from hybrid_rag.settings import ChunkingSettings
from hybrid_rag.symbols.extract import file_symbols
from hybrid_rag.types import LoadedFile, SourceType

SAMPLES = {
    "decorators and comments": "# c\n@d  # x\n# between\n@e(1)\ndef f():\n    pass\n",
    "semicolons": "import a; import b\ndef f(): pass; x = 1\n",
    "form feed": "class A:\n    x = 1\n\x0c\n    def f(self):\n        pass\n",
    "try, else, finally": (
        "try:\n    import a\nexcept ImportError:  # pragma\n    def a(): pass\n"
        "else:\n    class B: pass\nfinally:\n    pass\n"
    ),
    "while else": "while x:\n    def g(): pass\nelse:\n    def h(): pass\n",
    "deep nesting": (
        "def a():\n    def b():\n        class C:\n            @p\n            async def d(self): pass\n"
    ),
    "match": (
        "match x:\n    case [1, *rest] if rest:\n        def f(): pass\n    case _:\n        class K: pass\n"
    ),
    "soft keywords as names": "match = re.match(p, s)\ntype = 1\ncase = 2\n",
    "module code": (
        '"""Doc."""\nfrom __future__ import annotations\n\nX = (\n    1,\n)\n'
        'if __name__ == "__main__":\n    main()\n'
    ),
    "comments only": "# only\n",
}
PYTHON2 = 'import os\nx = 1\nprint "x"\ndef f():\n    if x:\n        def g():\n            pass\n'


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _file(text: str, path: str = "/src/m.py") -> LoadedFile:
    return LoadedFile(path, text, "0" * 64, len(text), 0.0, SourceType.CODE, "python")


@pytest.fixture
def python_grammar():  # type: ignore[no-untyped-def]
    loaded = load("python")
    if loaded is None:
        pytest.skip("tree-sitter-python is not installed")
    return loaded


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_tree_and_ast_give_the_same_starts(name: str, python_grammar) -> None:  # type: ignore[no-untyped-def]
    text = SAMPLES[name]
    tree = python_grammar.parser().parse(text.encode())
    assert tree_starts(tree, python_grammar.language) == ast_starts(ast.parse(text))


def test_a_clean_file_is_cut_without_an_ast_parse(monkeypatch: pytest.MonkeyPatch, python_grammar) -> None:  # type: ignore[no-untyped-def]
    text = SAMPLES["try, else, finally"]
    expected = definition_cuts(_lines(text), "python")  # no path: no grammar, the ast tree

    def no_ast(*args: object, **kwargs: object) -> ast.Module:
        raise AssertionError("ast.parse asked for a file tree-sitter read cleanly")

    monkeypatch.setattr(definitions_module.ast, "parse", no_ast)
    found = find_definitions("/src/m.py", text, "python")
    assert definition_cuts(_lines(text), "python", "/src/m.py", found) == expected
    assert [u.qualified_name for u in found.units or ()] == ["a", "B"]


def test_a_tree_with_an_error_leaves_the_cuts_to_ast(monkeypatch: pytest.MonkeyPatch, python_grammar) -> None:  # type: ignore[no-untyped-def]
    # a format spec tree-sitter-python misreads, which Python reads
    text = "x = f'{a:=^10}'\n\n\ndef f():\n    def g():\n        pass\n"
    assert python_grammar.parser().parse(text.encode()).root_node.has_error
    asked: list[str] = []
    parse = ast.parse

    def counted(source: str, *args: object, **kwargs: object) -> ast.Module:
        asked.append(source)
        return parse(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(definitions_module.ast, "parse", counted)
    cuts = definition_cuts(_lines(text), "python", "/src/m.py")
    assert asked == [text]
    assert cuts == ({0, 3}, {4})


def test_without_the_python_grammar_the_chunks_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n\n".join(SAMPLES[k] for k in ("decorators and comments", "deep nesting", "module code")) * 6
    settings = ChunkingSettings(max_tokens=40, min_tokens=8)
    with_grammar = chunk_file(_file(text), settings)
    monkeypatch.setattr(extract, "load", lambda name: None)  # as when the wheel is not installed
    found = find_definitions("/src/m.py", text, "python")
    assert found.units is None
    assert chunk_file(_file(text), settings, found) == with_grammar
    assert {s.qualified_name for s in file_symbols(_file(text), found)} >= {"f", "a", "a.b", "a.b.C.d"}


def test_python_2_is_cut_at_its_statements_like_its_symbols(python_grammar) -> None:  # type: ignore[no-untyped-def]
    """Python 2 (and syntax newer than the running interpreter's) is no ``ast`` tree: its cuts were
    the column-0 rule's, while its symbols came from tree-sitter; both now come from the tree."""
    lines = _lines(PYTHON2)
    with pytest.raises(SyntaxError):
        ast.parse(PYTHON2)
    assert heuristic_cuts(lines, "python") != ({0, 1, 2, 3}, {5})  # what the file got before
    found = find_definitions("/src/old.py", PYTHON2, "python")
    assert definition_cuts(lines, "python", "/src/old.py", found) == ({0, 1, 2, 3}, {5})
    assert [s.qualified_name for s in file_symbols(_file(PYTHON2, "/src/old.py"), found)] == ["x", "f", "f.g"]
