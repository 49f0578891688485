"""Re-exports, fields, enum variants and constants as rows of the symbol index (issue 37).

``member_spans(file, spans, definitions)`` gives the ``SymbolSpan``s of the names a code file
defines that are no unit of their own (``code/members.py`` reads them with tree-sitter, from the
definition finder's tree; Python from the same tree, or from its ``ast`` tree where that tree
holds an error, by ``python_members.py``), each with its kind (``reexport``, ``field``, ``variant``,
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

from collections.abc import Sequence
from typing import Any

from hybrid_rag.code.definitions import Definitions
from hybrid_rag.code.grammars import grammar_for_path
from hybrid_rag.code.members import members_for_path
from hybrid_rag.symbols.model import SymbolSpan
from hybrid_rag.symbols.python_members import python_members, tree_members

SECONDARY_KINDS = frozenset({"reexport", "field", "variant"})  # they yield to a definition of the name
_HOLDERS = frozenset({"class", "struct", "enum", "interface", "union", "trait", "object", "type", "impl"})


def secondary(symbols: Sequence[Any]) -> list[Any]:
    """``symbols`` (one name's definitions) without its re-exports, fields and variants when a
    definition of another kind shares the name; all of them otherwise."""
    primary = [s for s in symbols if s.kind not in SECONDARY_KINDS]
    return primary if primary else list(symbols)


def is_member(symbol: Any) -> bool:
    """A re-export, field or variant row: no definition that a use of its name resolves to."""
    return symbol.kind in SECONDARY_KINDS


def member_spans(
    path: str, text: str, language: str, spans: Sequence[SymbolSpan], definitions: Definitions
) -> list[SymbolSpan]:
    """The member rows of one code file (module docstring), read from the parse its definition
    finder already holds; [] where none can be read (a bug here never loses the file: its units
    and chunks are written regardless)."""
    try:
        return _member_spans(path, text, language, spans, definitions)
    except Exception:
        return []


def _member_spans(
    path: str, text: str, language: str, spans: Sequence[SymbolSpan], definitions: Definitions
) -> list[SymbolSpan]:
    parse = definitions.tree_parse  # the file is not parsed again
    if language == "python" and path.endswith(".py"):
        if (
            parse is not None
            and parse.loaded.grammar.language == "python"
            and not parse.tree.root_node.has_error
        ):
            found = tree_members(parse.tree.root_node, path, text)
        else:  # no clean tree: the finder reads the ``ast`` tree anyway
            tree = definitions.python_tree
            found = [] if tree is None else python_members(tree, path, text)
        separator = "."
    else:
        grammar = grammar_for_path(path)
        found = members_for_path(path, text, parse)
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
