"""A file's definitions as ``SymbolSpan``s, in file order.

They are asked of the file's definition finder (``hybrid_rag.code.definitions``: one tree-sitter
parse a file, every language it has a grammar for, shared with the chunker; where it has no units
for a Python file, the units of its ``ast`` tree, ``code/python_units.py``); other files without
units have no symbols.
A file that fails to parse has no symbols, never an error: its chunks are written all the same.
``file_references`` gives the uses of names in the same parse (none on the ``ast`` path).
"""

from __future__ import annotations

import re
from typing import Any

from hybrid_rag.code import definitions as finders
from hybrid_rag.code.definitions import Definitions
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


def finder(file: LoadedFile) -> Definitions:
    """The definition finder of ``file`` (``code/definitions.py``): ingest asks it once a file and
    hands it to the chunker, :func:`file_symbols` and :func:`file_references`."""
    return finders.find_definitions(file.path, file.text, file.language)


def file_references(file: LoadedFile, definitions: Definitions | None = None) -> list[ReferenceSpan]:
    """The uses of names in a code file (calls, types, bases, imports), from the parse that gave
    its symbols (``definitions``, the file's finder, asked once): ``scope`` is the position of
    the holding definition among ``file_symbols(file)``. None for text files or where no grammar
    applies."""
    if file.source_type is not SourceType.CODE:
        return []
    found = definitions if definitions is not None else finder(file)
    try:
        references = found.references
    except Exception:  # as for symbols: a parser bug never loses the file
        return []
    return [
        ReferenceSpan(r.name, r.kind, int(r.line), r.qualifier, r.module, r.scope) for r in references or ()
    ]


def file_symbols(file: LoadedFile, definitions: Definitions | None = None) -> list[SymbolSpan]:
    """The definitions of a code file (none for text files), asked of its finder ``definitions``
    (made here when the caller has none): tree-sitter's units, or a Python file's ``ast`` tree's."""
    if file.source_type is not SourceType.CODE:
        return []
    found = definitions if definitions is not None else finder(file)
    spans = [_from_unit(u) for u in found.definition_units or ()]
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
    """Classes, functions and methods of Python source by ``ast`` (the finder's fallback,
    ``code/python_units.py``); [] when it does not parse.

    >>> [(s.qualified_name, s.kind) for s in python_symbols("class A:\\n    def f(self): pass\\n")]
    [('A', 'class'), ('A.f', 'method')]
    """
    return [_from_unit(u) for u in finders.find_definitions("", text, "python").definition_units or ()]
