"""Names a file defines that are no unit of their own: re-exports, fields, enum variants and
constants (issue 37: a question naming them should find the place).

``members_for_path(path, text)`` parses the file with its extension's grammar and runs a small
query of this module's own for the grammars listed in ``_QUERIES`` (Rust, TypeScript/JavaScript,
C/C++, Go, Java, C#); every other file has none (Python is read from its ``ast`` tree by
``hybrid_rag.symbols.members``). Each capture's node gives one or more ``Member``s:

* ``reexport``: Rust ``pub use a::B`` (``B``, or its ``as`` name; ``a::{B, C}`` gives both; a
  glob ``pub use a::*`` names the module ``a``), TypeScript / JavaScript ``export { X, Y as Z }
  from './y'`` (``X``, ``Z``) and ``export * from './y'`` (the module's last path part, ``y``;
  ``export * as ns`` gives ``ns``); ``target`` is the name re-exported;
* ``field``: a struct's or class's field (Rust, C/C++, Go, TypeScript/JavaScript class fields
  and interface properties, Java, C#); a C++ member function declaration is no field;
* ``variant``: an enum's variant or enumerator (Rust, C/C++, TypeScript, Java, C#);
* ``constant``: Rust ``const`` / ``static`` items, C/C++ ``#define NAME value`` and top-level
  ``const`` / ``constexpr`` declarations, Go ``const`` specs, a TypeScript / JavaScript top-level
  ``const`` (its value no function, class or call: those are units already), Java ``static
  final`` fields and C# ``const`` fields.

A file that does not parse, a grammar without a query here, or a query the installed grammar
cannot compile gives no members, never an error: they only add rows to the symbol index.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from hybrid_rag.code.grammars import BY_LANGUAGE, grammar_for_path, load, ordered
from hybrid_rag.code.units import UNIT_KINDS

MEMBER_KINDS = ("reexport", "field", "variant", "constant")
# every kind a symbol row can have (``hybrid-rag symbols --kind``): a unit's, or a member's
SYMBOL_KINDS = tuple(sorted({*UNIT_KINDS, *MEMBER_KINDS}))
MAX_BYTES = 1_000_000  # a larger file (generated tables) gets no members
MAX_SIGNATURE = 200


@dataclass(frozen=True)
class Member:
    """One name a file defines as a member: lines 1-based inclusive, ``signature`` the line (or
    statement) that defines it, ``target`` the name a re-export re-exports ("" otherwise)."""

    name: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    target: str = ""


_RUST = """
(use_declaration (visibility_modifier)) @reexport
(field_declaration name: (field_identifier) @field) @holder
(enum_variant name: (identifier) @variant) @holder
(const_item name: (identifier) @constant) @const
(static_item name: (identifier) @constant) @const
"""
_ES = """
(export_statement source: (_)) @reexport
(program (lexical_declaration (variable_declarator name: (identifier) @constant value: (_) @value)) @const)
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @constant value: (_) @value)) @const))
"""
_JS = _ES + "(field_definition property: (property_identifier) @field) @holder\n"
_TS = (
    _ES
    + """
(public_field_definition name: (property_identifier) @field) @holder
(property_signature name: (property_identifier) @field) @holder
(enum_body (property_identifier) @variant @holder)
(enum_body (enum_assignment name: (property_identifier) @variant) @holder)
"""
)
_C = """
(field_declaration declarator: (_) @field)
(enumerator name: (identifier) @variant) @holder
(preproc_def name: (identifier) @constant value: (_)) @const
(translation_unit
  (declaration (type_qualifier) declarator: (init_declarator declarator: (identifier) @constant)) @const)
"""
_GO = """
(field_declaration name: (field_identifier) @field) @holder
(const_spec name: (identifier) @constant) @const
"""
_JAVA = """
(field_declaration declarator: (variable_declarator name: (identifier) @field)) @holder
(enum_constant name: (identifier) @variant) @holder
"""
_CSHARP = """
(field_declaration (variable_declaration (variable_declarator (identifier) @field))) @holder
(enum_member_declaration name: (identifier) @variant) @holder
"""
_QUERIES = {
    "rust": _RUST,
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "c": _C,
    "cpp": _C,
    "go": _GO,
    "java": _JAVA,
    "csharp": _CSHARP,
}
# a constant's value of these types is a unit already (a function, a class, what a call builds)
_UNIT_VALUES = frozenset(
    {"arrow_function", "function", "function_expression", "class", "call_expression", "new_expression"}
)
_DECLARATOR_NAMES = ("field_identifier", "identifier")


@functools.cache
def _query(grammar_name: str) -> Any:
    """The compiled member query of a grammar, or None (no query here, or it does not compile)."""
    source = _QUERIES.get(grammar_name)
    loaded = load(grammar_name) if source else None
    if source is None or loaded is None:
        return None
    try:
        import tree_sitter

        return tree_sitter.Query(loaded.language, source)
    except Exception:  # a grammar version whose node names differ: no members, never an error
        return None


def members_for_path(path: str, text: str, parse: Any = None) -> list[Member]:
    """The members of the file at ``path`` (its grammar from the extension), in file order.
    ``parse``: the definition finder's tree-sitter parse of the file (``extract.Parse``), whose
    tree is read instead of parsing the file again (``code/definitions.py``: one parse a file)."""
    grammar = grammar_for_path(path)
    if grammar is None:
        return []
    if parse is not None:
        name = parse.loaded.grammar.name  # the grammar whose tree gave the file's units
    else:
        choices = [grammar, *(g for g in BY_LANGUAGE.get(grammar.language, ()) if g is not grammar)]
        name = ordered(choices, text)[0]  # as the extractor picks: a C++ header's ``.h`` is C++
    if name not in _QUERIES:
        return []
    data = text.encode("utf-8", errors="replace")
    query = _query(name)
    loaded = load(name)
    if query is None or loaded is None or len(data) > MAX_BYTES:
        return []
    try:
        import tree_sitter

        tree = parse.tree if parse is not None else loaded.parser().parse(data)
        out: list[Member] = []
        for _, captures in tree_sitter.QueryCursor(query).matches(tree.root_node):
            out.extend(_members_of(name, captures))
    except Exception:  # a parser or query bug never loses the file: no members
        return []
    seen: set[tuple[str, str, int]] = set()
    unique = []
    for m in sorted(out, key=lambda m: (m.start_line, m.name)):
        key = (m.name, m.kind, m.start_line)
        if key not in seen:
            seen.add(key)
            unique.append(m)
    return unique


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", errors="replace")


def _line(node: Any) -> str:
    """The first line of ``node``'s text, whitespace collapsed."""
    return " ".join(_text(node).split("\n", 1)[0].split())[:MAX_SIGNATURE]


def _member(name_node: Any, kind: str, holder: Any, target: str = "", name: str = "") -> Member:
    (start, _), (end, column) = holder.start_point, holder.end_point
    return Member(
        name or _text(name_node),
        kind,
        start + 1,
        end if column == 0 and end > start else end + 1,  # a ``#define``'s node ends past its newline
        _line(holder),
        target,
    )


def _members_of(grammar: str, captures: dict[str, list[Any]]) -> list[Member]:
    if "reexport" in captures:
        node = captures["reexport"][0]
        return _rust_uses(node) if grammar == "rust" else _js_reexports(node)
    if "constant" in captures:
        value = captures.get("value")
        if value and value[0].type in _UNIT_VALUES:
            return []
        node = captures["constant"][0]
        holder = (captures.get("const") or [node.parent])[0]
        if holder.type == "lexical_declaration" and not _text(holder).lstrip().startswith("const"):
            return []
        return [_member(node, "constant", holder)]
    if "variant" in captures:
        node = captures["variant"][0]
        return [_member(node, "variant", (captures.get("holder") or [node])[0])]
    if "field" in captures:
        node = captures["field"][0]
        if grammar in ("c", "cpp"):
            return _c_field(node)
        holder = (captures.get("holder") or [node.parent])[0]
        kind = "constant" if _is_constant_field(grammar, holder) else "field"
        return [_member(node, kind, holder)]
    return []


def _is_constant_field(grammar: str, holder: Any) -> bool:
    head = _text(holder).split("=", 1)[0].split()
    if grammar == "java":
        return "static" in head and "final" in head
    if grammar == "csharp":
        return "const" in head
    return False


def _c_field(declarator: Any) -> list[Member]:
    """A C/C++ field's name under its declarators (``*b[3]``); a member function is no field."""
    node = declarator
    while node is not None and node.type not in _DECLARATOR_NAMES:
        if node.type == "function_declarator":
            return []
        node = node.child_by_field_name("declarator")
    if node is None:
        return []
    return [_member(node, "field", declarator.parent)]


def _rust_uses(node: Any) -> list[Member]:
    """The names a ``pub use`` declaration re-exports."""
    argument = node.child_by_field_name("argument")
    out: list[Member] = []

    def visit(n: Any) -> None:
        if n is None:
            return
        if n.type in ("identifier", "type_identifier"):
            out.append(_member(n, "reexport", node, target=_text(n)))
        elif n.type == "scoped_identifier":
            name = n.child_by_field_name("name")
            if name is not None:
                out.append(_member(name, "reexport", node, target=_text(n)))
        elif n.type == "use_as_clause":
            path, alias = n.child_by_field_name("path"), n.child_by_field_name("alias")
            if alias is not None and path is not None:
                out.append(_member(alias, "reexport", node, target=_text(path)))
        elif n.type == "use_wildcard":
            module = n.named_children[0] if n.named_children else None
            if module is not None:
                last = module.child_by_field_name("name") if module.type == "scoped_identifier" else module
                if last is not None and last.type == "identifier":
                    out.append(_member(last, "reexport", node, target=_text(module) + "::*"))
        elif n.type == "scoped_use_list":
            visit(n.child_by_field_name("list"))
        elif n.type == "use_list":
            for child in n.named_children:
                visit(child)

    visit(argument)
    return out


def _js_reexports(node: Any) -> list[Member]:
    """The names an ``export ... from`` statement re-exports."""
    source = node.child_by_field_name("source")
    module = _text(source).strip("'\"`") if source is not None else ""
    out: list[Member] = []
    for child in node.named_children:
        if child.type == "export_clause":
            for spec in child.named_children:
                if spec.type != "export_specifier":
                    continue
                name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                shown = alias if alias is not None else name
                if shown is not None and name is not None:
                    out.append(_member(shown, "reexport", node, target=_text(name)))
        elif child.type == "namespace_export":
            names = [c for c in child.named_children if c.type == "identifier"]
            if names:
                out.append(_member(names[0], "reexport", node, target=module))
    if not out and module and "*" in _text(node).split("from", 1)[0]:
        last = module.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]
        if last and last.isidentifier():
            out.append(_member(node, "reexport", node, target=module + "/*", name=last))
    return out
