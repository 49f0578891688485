"""Re-exports, fields, enum variants and constants as rows of the symbol index (issue 37).

``member_spans(file, spans, definitions)`` gives the ``SymbolSpan``s of the names a code file
defines that are no unit of their own (``code/members.py`` reads them with tree-sitter, from the
definition finder's tree; Python from the same tree by ``python_members.py``, or from its ``ast``
tree, below, where that tree holds an error), each with its kind (``reexport``, ``field``, ``variant``,
``constant``), its parent (the innermost definition among ``spans`` whose lines hold it: the
struct of a field, the enum of a variant) and its qualified name under it (``Peekable::iter``,
``Options.name``). A name already a unit on the same line (an exported constant that holds a
class) is not repeated. They come after the file's units (``file_symbols``), so the positions
that references' scopes point at do not move.

Python: in an ``__init__.py`` every relative import (``from .core import Pool``: ``Pool``; a
``from .core import *``: ``core``) and, in any module, an imported name its ``__all__`` lists are
re-exports; a class body's assignments are fields (variants in a class deriving from an
``Enum``); a module's top-level assignment to an upper-case name is a constant.

How they rank (``retrieval/symbol_ranking.py``): a member shares no boost with a definition of
the same name (``secondary``: a re-export, a field or a variant named like a function, class or
constant is not that definition: the definition is), so a re-export ranks below what it
re-exports; alone, it is what the question names, and its chunk is found.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from hybrid_rag.code.grammars import grammar_for_path
from hybrid_rag.code.members import Member, members_for_path
from hybrid_rag.symbols.model import SymbolSpan
from hybrid_rag.symbols.python_members import tree_members

SECONDARY_KINDS = frozenset({"reexport", "field", "variant"})  # they yield to a definition of the name
_HOLDERS = frozenset({"class", "struct", "enum", "interface", "union", "trait", "object", "type", "impl"})
_UPPER = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_ENUM_BASES = re.compile(r"(?:^|\.)(?:Int|Str)?(?:Enum|Flag)$")


def secondary(symbols: Sequence[Any]) -> list[Any]:
    """``symbols`` (one name's definitions) without its re-exports, fields and variants when a
    definition of another kind shares the name; all of them otherwise."""
    primary = [s for s in symbols if s.kind not in SECONDARY_KINDS]
    return primary if primary else list(symbols)


def is_member(symbol: Any) -> bool:
    """A re-export, field or variant row: no definition that a use of its name resolves to."""
    return symbol.kind in SECONDARY_KINDS


def member_spans(
    path: str, text: str, language: str, spans: Sequence[SymbolSpan], definitions: Any = None
) -> list[SymbolSpan]:
    """The member rows of one code file (module docstring); [] where none can be read (a bug
    here never loses the file: its units and chunks are written regardless)."""
    try:
        return _member_spans(path, text, language, spans, definitions)
    except Exception:
        return []


def _member_spans(
    path: str, text: str, language: str, spans: Sequence[SymbolSpan], definitions: Any
) -> list[SymbolSpan]:
    if language == "python" and path.endswith(".py"):
        parse = getattr(definitions, "tree_parse", None) if definitions is not None else None
        if (
            parse is not None
            and parse.loaded.grammar.language == "python"
            and not parse.tree.root_node.has_error
        ):
            found = tree_members(parse.tree.root_node, path, text)  # the finder's tree: no second parse
        else:  # no clean tree: the finder reads the ``ast`` tree anyway
            tree = getattr(definitions, "python_tree", None) if definitions is not None else _parse(text)
            found = [] if tree is None else python_members(tree, path, text)
        separator = "."
    else:
        grammar = grammar_for_path(path)
        parse = getattr(definitions, "tree_parse", None) if definitions is not None else None
        found = members_for_path(path, text, parse)  # the finder's tree: the file is not parsed again
        separator = grammar.separator if grammar is not None else "."
    taken = {(s.name, s.start_line) for s in spans}
    out: list[SymbolSpan] = []
    for m in found:
        if (m.name, m.start_line) in taken:
            continue
        taken.add((m.name, m.start_line))
        parent = _holder(spans, m.start_line, m.end_line) if m.kind != "reexport" else None
        qualified = f"{parent.qualified_name}{separator}{m.name}" if parent is not None else m.name
        out.append(
            SymbolSpan(
                name=m.name,
                kind=m.kind,
                qualified_name=qualified,
                signature=m.signature,
                start_line=m.start_line,
                end_line=m.end_line,
                doc=f"re-exports {m.target}" if m.kind == "reexport" and m.target else "",
                parent=parent.qualified_name if parent is not None else None,
            )
        )
    return out


def _holder(spans: Sequence[SymbolSpan], start: int, end: int) -> SymbolSpan | None:
    """The innermost type-like span whose lines hold ``start..end``."""
    best = None
    for s in spans:
        inside = s.kind in _HOLDERS and s.start_line <= start and end <= s.end_line
        if inside and (best is None or (s.end_line - s.start_line) <= (best.end_line - best.start_line)):
            best = s
    return best


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _found(name: str, kind: str, node: ast.stmt, lines: Sequence[str], target: str = "") -> Member:
    """A member read from Python source: the statement's lines, its first line as the signature."""
    line = " ".join((lines[node.lineno - 1] if node.lineno <= len(lines) else "").split())[:200]
    return Member(name, kind, node.lineno, node.end_lineno or node.lineno, line, target)


def python_members(tree: ast.Module, path: str, text: str) -> list[Member]:
    """Re-exports, fields, variants and constants of a parsed Python module (module docstring)."""
    lines = text.splitlines()
    out: list[Member] = []
    is_init = path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    listed = _all_names(tree)
    defined = {
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                shown = alias.asname or alias.name
                module = "." * node.level + (node.module or "")
                if alias.name == "*":
                    if is_init and node.level and node.module:
                        name = node.module.rsplit(".", 1)[-1]
                        out.append(_found(name, "reexport", node, lines, module + ".*"))
                elif (is_init and node.level) or (shown in listed and shown not in defined):
                    out.append(_found(shown, "reexport", node, lines, f"{module}.{alias.name}"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for name in _targets(node):
                if _UPPER.match(name) and not name.startswith("__"):
                    out.append(_found(name, "constant", node, lines))
        elif isinstance(node, ast.ClassDef):
            out.extend(_class_members(node, lines))
    return out


def _class_members(cls: ast.ClassDef, lines: Sequence[str]) -> list[Member]:
    enum = any(_ENUM_BASES.search(ast.unparse(b)) for b in cls.bases)
    out: list[Member] = []
    for node in cls.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for name in _targets(node):
                if not name.startswith("__"):
                    out.append(_found(name, "variant" if enum else "field", node, lines))
        elif isinstance(node, ast.ClassDef):
            out.extend(_class_members(node, lines))
    return out


def _targets(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _all_names(tree: ast.Module) -> set[str]:
    """The strings of the module's ``__all__`` list or tuple (none when it is computed)."""
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                node.value, (ast.List, ast.Tuple)
            ):
                names = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
                return {n for n in names if isinstance(n, str)}
    return set()
