"""A Python file's definitions read from its ``ast`` tree, as ``CodeUnit``s: the definition
finder's fallback (``definitions.py``) where tree-sitter has no units for a Python file (the
grammar is not installed, the parse failed badly, or the file has no ``.py`` name).

Unlike tree-sitter's units they start at the first decorator, not at the comments above it, and
carry no references.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from hybrid_rag.code.units import CodeUnit

MAX_SIGNATURE = 300  # characters


def ast_units(text: str, tree: ast.Module | None) -> list[CodeUnit]:
    """Classes, functions and methods of ``text`` from its parsed ``tree`` ([] when None: it did
    not parse), in source order; ``doc`` is the whole docstring.

    >>> [(u.qualified_name, u.kind) for u in ast_units("class A:\\n    def f(self): pass\\n",
    ...     ast.parse("class A:\\n    def f(self): pass\\n"))]
    [('A', 'class'), ('A.f', 'method')]
    """
    if tree is None:
        return []
    lines = text.splitlines()
    out: list[CodeUnit] = []

    def visit(body: Sequence[ast.stmt], parent: str | None, in_class: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualified = f"{parent}.{node.name}" if parent else node.name
                is_class = isinstance(node, ast.ClassDef)
                kind = "class" if is_class else ("method" if in_class else "function")
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out.append(
                    CodeUnit(
                        name=node.name,
                        kind=kind,
                        qualified_name=qualified,
                        signature=_signature(lines, node),
                        start_line=start,
                        end_line=node.end_lineno or node.lineno,
                        doc=ast.get_docstring(node) or "",
                        parent=parent,
                    )
                )
                visit(node.body, qualified, is_class)

    visit(tree.body, None, False)
    return out


def _signature(lines: Sequence[str], node: ast.stmt) -> str:
    """The definition's header lines up to the colon that opens its body, on one line."""
    body_start = node.body[0].lineno if node.body else node.lineno  # type: ignore[attr-defined]
    header = lines[node.lineno - 1 : max(body_start - 1, node.lineno)]
    text = " ".join(" ".join(header).split())
    if body_start == node.lineno:  # a one-line definition: cut at the body
        end = text.find(":", text.find(")") if ")" in text else 0)
        text = text[: end + 1] if end >= 0 else text
    return text[:MAX_SIGNATURE]
