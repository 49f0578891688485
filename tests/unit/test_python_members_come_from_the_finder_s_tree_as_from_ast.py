"""A Python module's re-exports, fields, variants and constants are read from the tree-sitter tree
the definition finder already holds (no ``ast`` parse of a clean file), and the tree's reading
equals the ``ast`` one that stays for a file whose tree holds an error."""

from __future__ import annotations

import ast

import pytest

from hybrid_rag.code.definitions import find_definitions
from hybrid_rag.symbols.python_members import python_members, tree_members

INIT = '''"""A package."""
from __future__ import annotations

from .core import Pool, make as build
from . import helpers
from .extra import *
from os import path

__all__ = ["Pool", "build", "path", f"x"]
LIMIT = A = 10
_PRIVATE_MAX: int = 3
lower = 1


@dataclass
class Options:
    name: str
    size: int = 0
    __slots__ = ()

    class Inner:
        depth = 1


class Colour(enum.IntEnum):
    RED = 1
    GREEN = 2


def build_all():
    return 1
'''

MODULE = """from .core import Pool
from os import path, sep

__all__ = ("path",)
__all__ += ["sep"]
MAX = 1
if True:
    HIDDEN = 2
"""


@pytest.mark.parametrize(("path", "text"), [("pkg/__init__.py", INIT), ("pkg/mod.py", MODULE)])
def test_the_tree_reads_what_ast_reads(path: str, text: str) -> None:
    parse = find_definitions(path, text, "python").tree_parse
    assert parse is not None and not parse.tree.root_node.has_error
    from_tree = tree_members(parse.tree.root_node, path, text)
    assert from_tree == python_members(ast.parse(text), path, text)
    assert from_tree  # not two empty readings


def test_an_init_s_members_by_kind() -> None:
    parse = find_definitions("pkg/__init__.py", INIT, "python").tree_parse
    assert parse is not None
    found = {(m.name, m.kind) for m in tree_members(parse.tree.root_node, "pkg/__init__.py", INIT)}
    assert {
        ("Pool", "reexport"),
        ("build", "reexport"),
        ("helpers", "reexport"),
        ("extra", "reexport"),
    } <= found
    assert {
        ("path", "reexport"),
        ("LIMIT", "constant"),
        ("A", "constant"),
        ("_PRIVATE_MAX", "constant"),
    } <= found
    assert {("name", "field"), ("size", "field"), ("depth", "field"), ("RED", "variant")} <= found
    assert not {n for n, _ in found} & {"lower", "__slots__", "annotations", "build_all", "x"}


def test_a_clean_module_s_members_need_no_ast_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    from hybrid_rag.symbols.members import member_spans

    definitions = find_definitions("pkg/__init__.py", INIT, "python")
    assert definitions.tree_parse is not None

    def no_ast(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed by ast again")

    monkeypatch.setattr(ast, "parse", no_ast)
    spans = member_spans("pkg/__init__.py", INIT, "python", [], definitions)
    assert {s.name for s in spans} >= {"Pool", "LIMIT", "RED"}
