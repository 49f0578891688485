"""A definition in a source file: the unit that chunks, windows and the symbol index are cut at.

Units are asked of the file's definition finder (``hybrid_rag.code.definitions.find_definitions``,
one parse a file; ``extract.extract_units(path, text)`` parses alone, for studies and tests): it
parses the file with the tree-sitter grammar its extension names (``hybrid_rag.code.grammars``),
runs that grammar's own tags query and turns the captures into units. None when no grammar
applies (an unknown extension, the grammar wheels not installed) or when the parse fails badly:
the finder's fallbacks then answer (a Python file's ``ast`` tree, the column-0 rule), so no file
is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

# every kind a unit (and so a symbol) can have; ``hybrid-rag symbols --kind`` takes these
UNIT_KINDS = (
    "class",
    "constant",
    "enum",
    "function",
    "impl",
    "interface",
    "macro",
    "method",
    "module",
    "namespace",
    "object",
    "struct",
    "trait",
    "type",
    "union",
)


@dataclass(frozen=True)
class CodeUnit:
    """One definition of a source file.

    ``start_line`` / ``end_line`` are 1-based and inclusive and cover the unit's attached doc
    comment and decorators / attributes as well as the definition itself. ``kind`` is one of
    function, method, class, struct, interface, trait, enum, union, type, impl, module, namespace,
    object, macro, constant, ... ``qualified_name`` joins the enclosing scopes the language's way
    (``Foo::bar`` in Rust and C++, ``pkg.Class.method`` in Java, ``Class.method`` in Python);
    ``parent`` is the qualified name of the enclosing unit (None at the top of the file).
    ``signature`` is the definition's head up to its body, whitespace collapsed; ``doc`` the
    attached doc comment or docstring without its comment markers ("" when there is none).
    """

    name: str
    kind: str
    qualified_name: str
    signature: str
    start_line: int
    end_line: int
    doc: str
    parent: str | None


@dataclass(frozen=True)
class CodeReference:
    """One use of a name in a source file, as a grammar's tags query captures it.

    ``kind`` is the capture's: call, class (``new Foo``, a base class), type, implementation,
    interface, or import (``from a.b import name``: ``module`` is ``a.b``). ``line`` is the
    1-based line of the name; ``qualifier`` the text before it in a member or scoped use
    (``self`` of ``self.take()``, ``Foo`` of ``Foo::new()``, "" for a plain name); ``scope`` the
    index, in the file's units, of the innermost definition holding the use (None at the top level).
    """

    name: str
    kind: str
    line: int
    qualifier: str = ""
    scope: int | None = None
    module: str = ""
