"""One extractor for every language: a grammar's tags query's captures turned into ``CodeUnit``s.

For each ``@definition.KIND`` capture with its ``@name`` the extractor finds

* the unit's node: the captured node, widened to the statement that holds it (a C declarator to
  its ``function_definition``, a Go ``type_spec`` to its ``type_declaration``, a Python function
  to its ``decorated_definition``, a JavaScript class to its ``export_statement``);
* its attached doc (``comments.py``): the comments right above it (no blank line between, not
  trailing the line before), attributes and annotations between them included in the range; in
  Python the docstring, when there is one;
* its kind: the capture's, made precise by the node's type (a Rust ``struct_item`` captured as
  ``definition.class`` is a struct) and its place (a function inside a class is a method);
* its enclosing units (the units still open where it starts, in one pass over them in source
  order), which give the qualified name and the parent, and the package a file declares (Java,
  Kotlin, Go, Scala, C#), which prefixes it; names without generic arguments
  (``Deserializer::end`` for a method of ``impl<R> Deserializer<R>``), signatures with them.

The work is linear in the file however deep its definitions nest: no walk up the tree per
definition (a tree-sitter node's ``parent`` costs its depth); the parents and siblings needed come
from one pruned walk down (``links.py``). Nothing here is specific to one language except what
``grammars.Grammar`` says.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hybrid_rag.code import preproc
from hybrid_rag.code.comments import attached_start, doc_text, node_text
from hybrid_rag.code.grammars import BY_LANGUAGE, Grammar, Loaded, grammar_for_path, load, ordered
from hybrid_rag.code.links import Links
from hybrid_rag.code.references import from_captures, unreliable_patterns
from hybrid_rag.code.units import UNIT_KINDS, CodeReference, CodeUnit

MAX_BYTES = 2_000_000  # a larger file (generated, minified) goes the regex way
MAX_ERROR_SHARE = 0.25  # more of the file than this in tokens the parser could not place: it failed
MAX_SIGNATURE = 300  # characters

# nodes that hold a definition as their main part: the unit's range widens to them
_WRAPPERS = frozenset(
    {
        "function_definition",  # a C / C++ declarator's
        "declaration",
        "field_declaration",
        "decorated_definition",
        "export_statement",
        "type_declaration",
        "template_declaration",
        "lexical_declaration",
        "variable_declaration",
        "ambient_declaration",
    }
)
_KIND_WORDS = (  # a word of the node type -> the kind (first match wins)
    ("impl", "impl"),
    ("namespace", "namespace"),
    ("trait", "trait"),
    ("interface", "interface"),
    ("protocol", "interface"),
    ("struct", "struct"),
    ("enum", "enum"),
    ("union", "union"),
    ("object", "object"),
    ("module", "module"),
    ("macro", "macro"),
    ("type_alias", "type"),
    ("type_item", "type"),
    ("type_spec", "type"),
    ("type_definition", "type"),
)
_TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "union", "impl", "object", "type"})
CONTAINER_KINDS = frozenset({"namespace", "module"})  # what they hold is top level for chunking
_KEEP_KINDS = frozenset(UNIT_KINDS)
_NOT_SIGNATURE = ("@", "#", "//", "/*", "* ", "*/")  # annotation and comment lines in a head


def units_for_path(path: str, text: str) -> list[CodeUnit] | None:
    """Units of the file at ``path`` (its grammar from the extension), or None."""
    grammar = grammar_for_path(path)
    if grammar is None:
        return None
    parsed = parse_path(path, text)
    return None if parsed is None else list(parsed[0])


Parsed = tuple[tuple[CodeUnit, ...], tuple[CodeReference, ...]]


def parse_path(path: str, text: str) -> Parsed | None:
    """(units, references) of the file at ``path`` from one parse, or None. Not cached: ingest asks
    once per file through ``definitions.find_definitions``."""
    parse = parse_path_tree(path, text)
    return None if parse is None else parse.parsed


@dataclass(frozen=True)
class Parse:
    """One file's tree-sitter parse: its units and references, the tree they came from and the
    grammar that read it (``python_starts.tree_starts`` reads a Python file's cuts from the tree)."""

    parsed: Parsed
    tree: Any
    loaded: Loaded


def parse_path_tree(path: str, text: str) -> Parse | None:
    """:func:`parse_path` with the tree it read (held for the file being ingested, then dropped)."""
    grammar = grammar_for_path(path)
    if grammar is None:
        return None
    choices = [grammar, *(g for g in BY_LANGUAGE.get(grammar.language, ()) if g is not grammar)]
    return _best(ordered(choices, text), text)


def units_for_language(language: str, text: str) -> list[CodeUnit] | None:
    """Units of ``text`` in the loader's ``language`` (hybrid_rag.ingest.loaders), or None."""
    parsed = parse_language(language, text)
    return None if parsed is None else list(parsed[0])


def parse_language(language: str, text: str) -> Parsed | None:
    """(units, references) of ``text`` by the grammars of the loader's ``language``, or None."""
    parse = _best(ordered(BY_LANGUAGE.get(language, ()), text), text)
    return None if parse is None else parse.parsed


def _best(choices: tuple[str, ...], text: str) -> Parse | None:
    """The first grammar's units when it parses cleanly, else the cleanest parse's (or None)."""
    data = text.encode("utf-8", errors="replace")
    if len(data) > MAX_BYTES:
        return None
    best: tuple[float, Parse] | None = None
    for name in choices:
        loaded = load(name)
        if loaded is None:
            continue
        try:
            tree = loaded.parser().parse(data)
            share = _error_share(tree.root_node, len(data)) if tree.root_node.has_error else 0.0
            if share > MAX_ERROR_SHARE:
                continue
            units, references = _units(loaded, tree.root_node, data)
            parsed = Parse((tuple(units), tuple(references)), tree, loaded)
        except Exception:  # a grammar (or this extractor) that cannot read the file: the regex path
            continue
        if share == 0.0:
            return parsed
        if best is None or share < best[0]:
            best = (share, parsed)
    return None if best is None else best[1]


def _error_share(root: Any, size: int) -> float:
    """The share of the file's bytes in tokens the parser could not place: the leaves of ERROR
    nodes (a well-formed definition inside an ERROR node, as after a C++ macro the grammar cannot
    read, counts as parsed). Only subtrees that hold an error are visited."""
    bad = 0
    stack = [(root, False)]
    while stack:
        node, in_error = stack.pop()
        in_error = in_error or node.type == "ERROR"
        for child in node.children:
            if (child.type == "ERROR" or child.has_error) and child.child_count:
                stack.append((child, in_error))
            elif (in_error or child.type == "ERROR") and child.child_count == 0:
                bad += child.end_byte - child.start_byte
    return bad / max(size, 1)


def _units(loaded: Loaded, root: Any, data: bytes) -> tuple[list[CodeUnit], list[CodeReference]]:
    import tree_sitter

    grammar = loaded.grammar
    found: dict[int, tuple[Any, Any, str]] = {}  # name node id -> (def node, name node, kind)
    refs: list[tuple[str, Any, Any]] = []  # (kind, name node, module node) of reference matches
    skip = unreliable_patterns(loaded.query)
    for pattern, captures in tree_sitter.QueryCursor(loaded.query).matches(root):
        names = captures.get("name")
        if not names:
            continue
        defs = [(k[len("definition.") :], v) for k, v in captures.items() if k.startswith("definition.")]
        if not defs:
            kind = next((k[len("reference.") :] for k in captures if k.startswith("reference.")), None)
            if kind is not None and pattern not in skip:
                module = captures.get("module")
                refs.append((kind, names[0], module[0] if module else None))
            continue
        kind, nodes = defs[0]
        node, name = nodes[0], names[0]
        if not (node.start_byte <= name.start_byte and name.end_byte <= node.end_byte):
            continue
        held = found.get(name.id)
        if held is None or (node.end_byte - node.start_byte) < (held[0].end_byte - held[0].start_byte):
            found[name.id] = (node, name, kind)
    # the unit node (widened) for each capture, in source order, one per node
    links = Links(root, [n for node, name, _ in found.values() for n in (node, name)])
    rows: dict[int, tuple[Any, Any, Any, str]] = {}  # outer id -> (outer, def, name, kind)
    for node, name, kind in found.values():
        outer = _widen(node, links, grammar.wrappers)
        if outer.id not in rows:
            rows[outer.id] = (outer, node, name, kind)
    ordered = sorted(rows.values(), key=lambda r: (r[0].start_byte, -r[0].end_byte))
    package = _package(grammar, root, data)
    # the units that enclose the current one, outermost first: (end byte, qualified name, kind).
    # Rows come in source order, outer before inner, and syntax nodes nest, so the nearest
    # enclosing unit is the innermost one still open: one pass, no walk up the tree (a node's
    # ``parent`` costs its depth, and a walk per definition made deep nesting cubic)
    open_units: list[tuple[int, str, str]] = []
    unit_spans: list[tuple[int, int, int]] = []  # (start byte, end byte, index) of each unit's node
    units: list[CodeUnit] = []
    for outer, node, name_node, capture_kind in ordered:
        while open_units and open_units[-1][0] < outer.end_byte:
            open_units.pop()
        up = links.parent(node) if node.type in grammar.package else None
        if up is not None and links.parent(up) is None:
            continue  # the file's package clause names the others' prefix, it is no unit
        enclosing = (open_units[-1][1], open_units[-1][2]) if open_units else None
        prefix = _name_prefix(name_node, data, links)
        kind = _kind(node, capture_kind, enclosing[1] if enclosing else None, bool(prefix))
        if kind not in _KEEP_KINDS or (kind == "constant" and enclosing is not None):
            continue
        name = bare_name(node_text(data, name_node))
        scope = enclosing[0] if enclosing else package
        qualified = _qualify(grammar, scope, prefix, name)
        parent = enclosing[0] if enclosing else None
        if prefix:
            parent = _qualify(grammar, scope, "", prefix)
        last = _body_after(outer, grammar.body_after)
        open_units.append((last.end_byte, qualified, kind))
        unit_spans.append((outer.start_byte, last.end_byte, len(units)))
        start = attached_start(outer, links)
        units.append(
            CodeUnit(
                name=name,
                kind=kind,
                qualified_name=qualified,
                signature=_signature(node, outer, data, links, declaration=kind != "constant"),
                start_line=start.start_point[0] + 1,
                end_line=_end_line(last),
                doc=doc_text(grammar, node, outer, data, links),
                parent=parent,
            )
        )
    references = from_captures(refs, set(found), unit_spans, data, grammar.name)
    if grammar.name in preproc.LANGUAGES and b"#el" in data:  # the ``#if`` branches definitions are in
        references = sorted(
            references + preproc.alternatives(loaded.language, root, units, unit_spans), key=lambda r: r.line
        )
    return units, references


def _widen(node: Any, links: Links, wrappers: tuple[str, ...] = ()) -> Any:
    """The statement that holds a captured definition (declarators and wrappers walked up, and the
    grammar's own ``wrappers``: Dart's ``method_signature``)."""
    parent = links.parent(node)
    while parent is not None and (
        parent.type.endswith("declarator") or parent.type in _WRAPPERS or parent.type in wrappers
    ):
        node = parent
        parent = links.parent(node)
    return node


def _body_after(outer: Any, body_type: str) -> Any:
    """The node a unit ends with: ``outer``, or its next sibling when that is its body (Dart keeps a
    function's ``function_body`` beside its signature, not in it)."""
    if body_type:
        following = outer.next_named_sibling
        if following is not None and following.type == body_type:
            return following
    return outer


def _end_line(node: Any) -> int:
    """1-based last line (a node that ends at column 0 ends on the line before)."""
    row, col = node.end_point
    return row if col == 0 and row > node.start_point[0] else row + 1


def _kind(node: Any, capture: str, parent_kind: str | None, scoped: bool = False) -> str:
    """The capture's kind, made precise by the node type and by what encloses it (``scoped``:
    the name itself names a type, as in C++ ``int Foo::bar()`` or a Go method's receiver)."""
    kind = capture
    if scoped and kind in {"function", "method"}:
        return "method"
    if capture in {"class", "type", "interface", "module"}:
        for word, named in _KIND_WORDS:
            if word in node.type:
                kind = named
                break
    shape = node.child_by_field_name("type") if kind == "type" else None  # Go: type X struct {...}
    if shape is not None:
        kind = next((named for word, named in _KIND_WORDS[:8] if word in shape.type), kind)
    if kind == "function" and parent_kind in _TYPE_KINDS:
        kind = "method"
    if kind == "method" and parent_kind is not None and parent_kind not in _TYPE_KINDS:
        kind = "function"  # a function nested in a function or a namespace
    return kind


def _name_prefix(name: Any, data: bytes, links: Links) -> str:
    """The scope written into the name itself (C++ ``Foo::bar``, a Go method's receiver type)."""
    parent = links.parent(name)
    scoped = {"qualified_identifier", "scoped_identifier"}
    while parent is not None and parent.type in scoped:  # C++ nests ``A::B::f`` as A::(B::f)
        outer = links.parent(parent)
        if outer is None or outer.type not in scoped:
            break
        parent = outer
    if parent is not None and parent.type in scoped:
        full = node_text(data, parent)
        own = node_text(data, name)
        if full.endswith(own):
            return bare_name(full[: -len(own)].rstrip(":").strip())
    if parent is not None and parent.type == "method_declaration":
        receiver = parent.child_by_field_name("receiver")
        if receiver is not None:
            for node in _descendants(receiver):
                if node.type == "type_identifier":
                    return node_text(data, node)
    return ""


_INLINE_COMMENT = re.compile(r"/\*.*?\*/")
_GENERIC_ARGS = re.compile(r"<[^<>]*>")
_REFERENCE = re.compile(r"^(?:&\s*(?:'\w+\s+)?(?:mut\s+)?|\*\s*)")


def bare_name(name: str) -> str:
    """A name without its generic arguments (``Deserializer<R>``, ``PrettyFormatter<'a>``,
    C++ ``Pool<T>::take``'s ``Pool<T>``) or a reference's ``&``: the path a reader looks it up by;
    the signature keeps them. An operator's name (``operator<<``) is left as it is.

    >>> bare_name("Deserializer<R>"), bare_name("Map<K, Vec<V>>"), bare_name("&'a mut Slice<T>")
    ('Deserializer', 'Map', 'Slice')
    """
    if "operator" in name:
        return name
    name = _REFERENCE.sub("", name.strip())
    while "<" in name:
        shorter = _GENERIC_ARGS.sub("", name)
        if shorter == name:
            break
        name = shorter
    return " ".join(name.split())


def _descendants(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _qualify(grammar: Grammar, scope: str | None, prefix: str, name: str) -> str:
    sep = grammar.separator
    if prefix:
        prefix = prefix.replace("::", sep)
    parts = [p for p in (scope, prefix, name) if p]
    return sep.join(parts)


def _package(grammar: Grammar, root: Any, data: bytes) -> str | None:
    """The package the file declares (``package com.example;``), or None."""
    for child in root.children:
        if child.type in grammar.package:
            named = child.child_by_field_name("name")
            if named is None:
                names = [c for c in child.named_children if "identifier" in c.type or c.type == "name"]
                named = names[-1] if names else None
            return node_text(data, named).strip() if named is not None else None
    return None


def _signature(node: Any, outer: Any, data: bytes, links: Links, declaration: bool = True) -> str:
    """The definition's head: from its first line (decorators off) to its body, whitespace collapsed.
    A ``declaration`` (of a function, a method, a type: not a constant) that has no body and ends in
    ``;`` keeps it: ``int take();`` is how a reader (and the symbol lookup) tells it from the
    definition."""
    head = outer
    if head.type == "decorated_definition":
        head = head.child_by_field_name("definition") or node
    body = None
    value = node.child_by_field_name("value")  # const f = (x) => ...: the function is the value
    for candidate in _candidates(node, value, head, links):
        body = candidate.child_by_field_name("body") or next(  # Kotlin's and Swift's bodies have no field
            (c for c in candidate.named_children if c.type.endswith("body")),
            None,
        )
        if body is not None:
            break
    end = body.start_byte if body is not None and body.start_byte > head.start_byte else head.end_byte
    raw = data[head.start_byte : end].decode("utf-8", errors="replace")
    if body is None:
        raw = _bodiless_head(raw)
    lines = [ln for ln in raw.splitlines() if not ln.lstrip().startswith(_NOT_SIGNATURE)] or raw.splitlines()
    sig = " ".join(" ".join(lines).split())
    declared = declaration and body is None and sig.endswith(";")
    sig = sig.removesuffix("=>").rstrip("{:;=").rstrip()
    if declared:  # a declaration without its body keeps its ";" (a C++ header's ``int take();``)
        return sig[: MAX_SIGNATURE - 1] + ";"
    return sig[:MAX_SIGNATURE]


def _bodiless_head(raw: str) -> str:
    r"""The head of a definition without a body (a declaration, a constant, a C ``typedef struct``):
    its first line, or more while a parenthesis of a declaration stays open (parameters written
    on several lines; not an assignment's value), cut before a brace.

    >>> _bodiless_head("int take(int a,\n         int b);\nint next;")
    'int take(int a,\n         int b);'
    """
    lines = raw.split("\n")
    if "=" in lines[0].split("(", 1)[0]:  # a constant: its first line (an inline comment off)
        return _INLINE_COMMENT.sub(" ", lines[0].split("{", 1)[0])
    depth, kept = 0, []
    for line in lines:
        kept.append(line)
        depth += line.count("(") - line.count(")")
        if depth <= 0 or "{" in line:
            break
    return "\n".join(kept).split("{", 1)[0]


def _candidates(node: Any, value: Any, head: Any, links: Links) -> Iterator[Any]:
    """Where a definition's body may be, nearest first: the captured node, its value (an arrow
    function), the unit's head, then the ancestors of ``node`` that lie inside the head. Lazy and
    bounded by the head: walking on to the root for every definition (``parent`` itself costs the
    node's depth) made a deeply nested file cubic to read."""
    yield node
    if value is not None:
        yield value
    yield head
    current = node
    while current.id != head.id:
        current = links.parent(current)
        if current is None or not (
            head.start_byte <= current.start_byte and current.end_byte <= head.end_byte
        ):
            return
        yield current


def extract_units(path: str, text: str) -> list[CodeUnit] | None:
    """The definitions of ``text`` (the file at ``path``) in source order, or None when no grammar
    applies or the parse fails badly (the caller then uses the regular-expression path)."""
    return units_for_path(path, text)


def extract_references(path: str, text: str) -> list[CodeReference] | None:
    """The references of ``text`` (the file at ``path``) in source order, from one parse (ingest
    takes them with the units from ``definitions.find_definitions``); None when no grammar
    applies or the parse fails badly."""
    parsed = parse_path(path, text)
    return None if parsed is None else list(parsed[1])
