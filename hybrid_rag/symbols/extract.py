"""A file's definitions as ``SymbolSpan``s, in file order.

They are asked of the file's definition finder (``hybrid_rag.code.definitions``: one tree-sitter
parse a file, every language it has a grammar for, shared with the chunker). Where it has none
for a file or cannot be imported, Python source is read from the finder's ``ast`` tree, the one
the chunker cuts by; other files have no symbols.
A file that fails to parse has no symbols, never an error: its chunks are written all the same.
``file_references`` gives the uses of names in the same parse (none on the ``ast`` path).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from hybrid_rag.symbols.members import member_spans
from hybrid_rag.symbols.model import ReferenceSpan, SymbolSpan
from hybrid_rag.types import LoadedFile, SourceType

_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n\s*\n")
MAX_DOC = 240  # characters of the first sentence kept
MAX_SIGNATURE = 300


def first_sentence(doc: str | None) -> str:
    """The first sentence of a doc comment, on one line (comment markers already stripped).

    >>> first_sentence("Open a pool.  Connections are reused.")
    'Open a pool.'
    """
    if not doc:
        return ""
    text = doc.strip()
    cut = _SENTENCE_END.search(text)
    head = text[: cut.start()] if cut else text
    return " ".join(head.split())[:MAX_DOC]


def finder(file: LoadedFile) -> Any:
    """The definition finder of ``file`` (``code/definitions.py``), or None when the tree-sitter
    layer cannot be imported (the ``ast`` path below still serves Python)."""
    try:
        from hybrid_rag.code.definitions import find_definitions
    except ImportError:
        return None
    return find_definitions(file.path, file.text, file.language)


def file_references(file: LoadedFile, definitions: Any = None) -> list[ReferenceSpan]:
    """The uses of names in a code file (calls, types, bases, imports), from the parse that gave
    its symbols (``definitions``, the file's finder, asked once): ``scope`` is the position of
    the holding definition among ``file_symbols(file)``. None for text files or where no grammar
    applies."""
    if file.source_type is not SourceType.CODE:
        return []
    found = definitions if definitions is not None else finder(file)
    if found is None:
        return []
    try:
        references = found.references
    except Exception:  # as for symbols: a parser bug never loses the file
        return []
    return [
        ReferenceSpan(r.name, r.kind, int(r.line), r.qualifier, r.module, r.scope) for r in references or ()
    ]


def file_symbols(file: LoadedFile, definitions: Any = None) -> list[SymbolSpan]:
    """The definitions of a code file (none for text files), asked of its finder ``definitions``
    (made here when the caller has none)."""
    if file.source_type is not SourceType.CODE:
        return []
    found = definitions if definitions is not None else finder(file)
    units = None
    if found is not None:
        try:
            units = found.units
        except Exception:  # a parser bug must not lose the file: its chunks are written regardless
            units = None
    if units is not None:
        spans = [_from_unit(u) for u in units]
    elif file.language == "python":
        tree = None if found is None else found.python_tree
        spans = python_symbols(file.text) if found is None else python_tree_symbols(file.text, tree)
    else:
        return []
    return [*spans, *member_spans(file.path, file.text, file.language, spans, found)]  # symbols/members.py


def _from_unit(unit: Any) -> SymbolSpan:
    return SymbolSpan(
        name=str(unit.name),
        kind=str(unit.kind),
        qualified_name=str(unit.qualified_name or unit.name),
        signature=" ".join(str(unit.signature or "").split())[:MAX_SIGNATURE],
        start_line=int(unit.start_line),
        end_line=int(unit.end_line),
        doc=first_sentence(unit.doc),
        parent=unit.parent or None,
    )


def python_symbols(text: str) -> list[SymbolSpan]:
    """Classes, functions and methods of Python source by ``ast``; [] when it does not parse.

    >>> [(s.qualified_name, s.kind) for s in python_symbols("class A:\\n    def f(self): pass\\n")]
    [('A', 'class'), ('A.f', 'method')]
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    return python_tree_symbols(text, tree)


def python_tree_symbols(text: str, tree: ast.Module | None) -> list[SymbolSpan]:
    """:func:`python_symbols` from a parsed ``tree`` of ``text`` (None: it did not parse)."""
    if tree is None:
        return []
    lines = text.splitlines()
    out: list[SymbolSpan] = []

    def visit(body: Sequence[ast.stmt], parent: str | None, in_class: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualified = f"{parent}.{node.name}" if parent else node.name
                is_class = isinstance(node, ast.ClassDef)
                kind = "class" if is_class else ("method" if in_class else "function")
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out.append(
                    SymbolSpan(
                        name=node.name,
                        kind=kind,
                        qualified_name=qualified,
                        signature=_py_signature(lines, node),
                        start_line=start,
                        end_line=node.end_lineno or node.lineno,
                        doc=first_sentence(ast.get_docstring(node)),
                        parent=parent,
                    )
                )
                visit(node.body, qualified, is_class)

    visit(tree.body, None, False)
    return out


def _py_signature(lines: Sequence[str], node: ast.stmt) -> str:
    """The definition's header lines up to the colon that opens its body, on one line."""
    body_start = node.body[0].lineno if node.body else node.lineno  # type: ignore[attr-defined]
    header = lines[node.lineno - 1 : max(body_start - 1, node.lineno)]
    text = " ".join(" ".join(header).split())
    if body_start == node.lineno:  # a one-line definition: cut at the body
        end = text.find(":", text.find(")") if ")" in text else 0)
        text = text[: end + 1] if end >= 0 else text
    return text[:MAX_SIGNATURE]
