"""Where a Python file's statements and definitions start, from either of its two parses.

The chunker cuts Python at every top-level statement and at every nested ``def`` / ``class``
(``cuts.python_cuts``). ``tree_starts`` reads those lines from the tree-sitter tree the definition
finder already has for the file's symbols (one parse serves both); ``ast_starts`` reads them from
Python's ``ast`` tree, the fallback the finder keeps behind it for a file whose tree-sitter parse
holds an error (a grammar older than the syntax, or a broken file: ``ast`` then decides, as it
always did). Both answer the same lines for a file both read cleanly (``RESULTS.md#one-finder``:
every Python file of Django 5.0.6, this repository and the judged projects).

A start is the statement's first line, 0-based: a decorated definition's first decorator.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Sequence
from typing import Any

Starts = tuple[set[int], set[int]]  # (top-level statements, nested definitions), 0-based lines

_DEFINITION_NODES = ("function_definition", "class_definition")
_NOT_STATEMENTS = frozenset({"comment", "line_continuation"})  # extras among the module's children


@functools.cache
def _query(language: Any) -> Any:
    import tree_sitter

    return tree_sitter.Query(
        language, "(decorated_definition) @decorated (function_definition) @def (class_definition) @def"
    )


def tree_starts(tree: Any, language: Any) -> Starts | None:
    """(top-level statement starts, nested definition starts) of a tree-sitter Python ``tree``
    (``language``: the grammar it was parsed with), or None when the tree holds an error or a
    missing token (the ``ast`` tree then decides)."""
    import tree_sitter

    root = tree.root_node
    if root.has_error:
        return None
    top_ids: set[int] = set()
    top: set[int] = set()
    for child in root.children:
        if child.type in _NOT_STATEMENTS or not child.is_named:
            continue
        top_ids.add(child.id)
        top.add(child.start_point[0])
    captures = tree_sitter.QueryCursor(_query(language)).captures(root)
    wrapper: dict[int, Any] = {}  # a decorated definition's inner node id -> the decorated node
    for node in captures.get("decorated", ()):
        inner = node.child_by_field_name("definition")
        if inner is not None:
            wrapper[inner.id] = node
    nested: set[int] = set()
    for node in captures.get("def", ()):
        outer = wrapper.get(node.id, node)
        if outer.id not in top_ids:
            nested.add(outer.start_point[0])
    return top, nested


def ast_starts(tree: ast.Module) -> Starts:
    """(top-level statement starts, nested definition starts) of a parsed ``ast`` tree."""
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

    def start(node: ast.stmt) -> int:
        return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))]) - 1

    top = {start(node) for node in tree.body}
    nested = {start(node) for node in _nested_statements(tree.body) if isinstance(node, defs)}
    return top, nested


def _nested_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements inside the bodies of ``body`` (expressions are not visited: it is faster)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, name, ()):
                if isinstance(child, ast.stmt):
                    yield child
                stack.append(child)
