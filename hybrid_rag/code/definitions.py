"""Where a file's definitions start: the one finder that chunking, the symbol index, the
reference index and the definition windows ask, once per file.

``find_definitions`` parses a file once with tree-sitter (``extract.py``: the grammar of its
extension, else of its language) and keeps the units, the references and the tree of that parse;
a Python file's cuts are read from the same tree (``python_starts.py``). The fallbacks stand
behind it: a Python file's ``ast`` tree, parsed at most once and only when the tree-sitter tree
holds an error or there is none (the grammar missing, the file too large or no ``.py`` name),
which then gives its cuts and its units (``python_units.py``); for a file neither reads, the
column-0 rule (``definition_lines.heuristic_cuts``); and for a piece of text with no file around
it (a chunk at embedding time), the line rule (``definition_lines.definition_lines``). Nothing is cached on a
file's text: the ingest holds the answer for the file it is processing and drops it with the file.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from hybrid_rag.code.definition_lines import DefinitionLines, definition_lines, heuristic_cuts, pull_up
from hybrid_rag.code.extract import Parse, Parsed, parse_language, parse_path_tree
from hybrid_rag.code.grammars import grammar_for_path
from hybrid_rag.code.python_starts import Starts, ast_starts, tree_starts
from hybrid_rag.code.python_units import ast_units
from hybrid_rag.code.units import CodeReference, CodeUnit

__all__ = [
    "DefinitionLines",
    "Definitions",
    "definition_lines",
    "find_definitions",
    "heuristic_cuts",
    "pull_up",
]

_UNSET = object()


@dataclass
class Definitions:
    """One file's definitions as found once; each view is computed on its first ask."""

    path: str
    text: str
    language: str
    _by_path: object = field(default=_UNSET, repr=False)
    _by_language: object = field(default=_UNSET, repr=False)
    _python: object = field(default=_UNSET, repr=False)

    def _tree_parse(self) -> Parse | None:
        if self._by_path is _UNSET:
            self._by_path = parse_path_tree(self.path, self.text) if self.path else None
        return self._by_path  # type: ignore[return-value]

    def _path_parse(self) -> Parsed | None:
        parse = self._tree_parse()
        return None if parse is None else parse.parsed

    @property
    def tree_parse(self) -> Parse | None:
        """The file's one tree-sitter parse (units, references, tree, grammar), or None."""
        return self._tree_parse()

    @property
    def units(self) -> tuple[CodeUnit, ...] | None:
        """The tree-sitter units of the grammar of the file's extension; None where none applies
        or the parse fails badly (the symbol index then falls back to the ``ast`` tree)."""
        parsed = self._path_parse()
        return None if parsed is None else parsed[0]

    @property
    def references(self) -> tuple[CodeReference, ...] | None:
        """The uses of names from the same parse as :attr:`units`."""
        parsed = self._path_parse()
        return None if parsed is None else parsed[1]

    @property
    def definition_units(self) -> tuple[CodeUnit, ...] | None:
        """The file's definitions as the symbol index reads them: :attr:`units`, else (a Python
        file tree-sitter has no units for) those of its ``ast`` tree (none when it does not parse);
        None for another file without units."""
        try:
            units = self.units
        except Exception:  # a parser bug must not lose the file: its chunks are written regardless
            units = None
        if units is None and self.language == "python":
            return tuple(ast_units(self.text, self.python_tree))
        return units

    @property
    def cut_units(self) -> tuple[CodeUnit, ...] | None:
        """The units the chunker cuts at: the extension's grammar when it has one (the same parse
        as :attr:`units`), else the grammar of the file's language."""
        if self.path and grammar_for_path(self.path) is not None:
            return self.units
        if self._by_language is _UNSET:
            self._by_language = parse_language(self.language, self.text)
        parsed: Parsed | None = self._by_language  # type: ignore[assignment]
        return None if parsed is None else parsed[0]

    @property
    def python_starts(self) -> Starts | None:
        """(top-level statement starts, nested definition starts), 0-based, of a Python file: from
        the tree-sitter parse that gives its units when the file's grammar is Python's and its tree
        holds no error, else from its ``ast`` tree; None when neither reads it."""
        parse = self._tree_parse()
        if parse is not None and parse.loaded.grammar.language == "python":
            starts = tree_starts(parse.tree, parse.loaded.language)
            if starts is not None:
                return starts
        tree = self.python_tree
        return None if tree is None else ast_starts(tree)

    @property
    def python_tree(self) -> ast.Module | None:
        """The file's ``ast`` tree (parsed once), or None when it does not parse."""
        if self._python is _UNSET:
            try:
                self._python = ast.parse(self.text)
            except (SyntaxError, ValueError, RecursionError):
                self._python = None
        return self._python  # type: ignore[return-value]


def find_definitions(path: str, text: str, language: str) -> Definitions:
    """The definition finder of one file (``path`` picks the grammar, ``language`` the fallback)."""
    return Definitions(path, text, language)
