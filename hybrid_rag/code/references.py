"""A file's references from the captures the extractor's tags query run already made.

Every grammar's query (``grammars.py``) captures ``@reference.KIND`` beside ``@definition.KIND``;
``extract.py`` hands the reference matches here with the definitions it kept, and each becomes a
``CodeReference``: its name, kind, line, the qualifier written before it (``self`` of
``self.take()``, ``Foo`` of ``Foo::new()``), the innermost definition holding it, and for an
import the module it names. A definition's own name is never a reference of itself; one name node
captured by several patterns (a Java type in ``new Foo()``) is one reference, of the most precise
kind; a pattern that relies on a predicate py-tree-sitter does not apply (Ruby's ``#is-not?
local``, which would make every local variable a call) is left out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

from hybrid_rag.code import call_args
from hybrid_rag.code.bindings import BINDING, better, primitive
from hybrid_rag.code.comments import node_text
from hybrid_rag.code.units import CodeReference

MAX_REFERENCES = 20_000  # per file: a generated table of calls is not worth more
MAX_QUALIFIER = 120  # characters
# the kind kept when patterns capture one name node twice, most precise first
_PRIORITY = {
    BINDING: 0,
    "import": 0,
    "call": 1,
    "implementation": 2,
    "class": 3,
    "interface": 4,
    "type": 5,
    "name": 6,
}
# fields of a member or scoped node that hold what comes before the name
_QUALIFIER_FIELDS = (
    "object",
    "operand",
    "value",
    "argument",
    "path",
    "scope",
    "receiver",
    "package",
    "namespace",
)


@functools.cache
def unreliable_patterns(query: Any) -> frozenset[int]:
    """Patterns whose captures need a predicate this binding does not check (``#is-not? local``)."""
    out = set()
    for i in range(query.pattern_count):
        if "local" in (query.pattern_assertions(i) or {}):
            out.add(i)
    return frozenset(out)


def from_captures(
    matches: Iterable[tuple[str, Any, Any]],
    definition_names: set[int],
    unit_spans: Sequence[tuple[int, int, int]],
    data: bytes,
    language: str = "",
) -> list[CodeReference]:
    """``matches``: (kind, name node, module node or None) of each reference match, in any order;
    ``definition_names``: the ids of the name nodes of definitions; ``unit_spans``: (start byte,
    end byte, index in the file's units) of each kept unit's node, in source order, outer before
    inner. The references in source order; a call in ``call_args.LANGUAGES`` keeps its argument
    list's count and plain names in ``module``."""
    best: dict[int, tuple[str, Any, Any]] = {}
    for kind, name, module in matches:
        if name.id in definition_names:
            continue
        held = best.get(name.id)
        if held is None or _PRIORITY.get(kind, 9) < _PRIORITY.get(held[0], 9):
            best[name.id] = (kind, name, module)
        elif kind == held[0] == BINDING and better(_text(data, held[2]), _text(data, module)):
            best[name.id] = (kind, name, module)  # ``var x = new Foo()``: Foo, not var
    for kind, name, _ in list(best.values()):  # ``cli`` of ``cli.command()``: a use of cli too
        head = _qualifier_node(name) if kind not in _UNQUALIFIED else None
        if (
            head is not None
            and head.id not in best
            and head.id not in definition_names
            and _plain(head)
            and node_text(data, head) not in _SELF
        ):
            best[head.id] = ("name", head, None)
    ordered = sorted(best.values(), key=lambda r: r[1].start_byte)[:MAX_REFERENCES]
    scopes = _scopes([name.start_byte for _, name, _ in ordered], unit_spans)
    out: list[CodeReference] = []
    for (kind, name, module), scope in zip(ordered, scopes, strict=True):
        text = node_text(data, name).strip()
        if kind == BINDING:
            modname = _text(data, module)  # a written type, whitespace made single
        elif kind == "call" and language in call_args.LANGUAGES:
            modname = call_args.of_call(name, data)
        else:
            modname = _unquote(node_text(data, module)) if module is not None else ""
        if kind == "import":
            text = _last_part(_unquote(text))
        if not text or len(text) > 200 or (kind == BINDING and primitive(modname)):
            continue
        head = None if kind in _UNQUALIFIED else _qualifier_node(name)
        qualifier = "" if head is None else " ".join(node_text(data, head).split())[:MAX_QUALIFIER]
        if head is None and _global(name):
            qualifier = "::"  # C++ ``::close(fd)``: the global namespace's, never a member
        out.append(
            CodeReference(
                name=text,
                kind=kind,
                line=name.start_point[0] + 1,
                qualifier=qualifier,
                scope=scope,
                module=modname[:MAX_QUALIFIER],
            )
        )
    return out


_UNQUALIFIED = frozenset({"import", BINDING})  # kinds whose name has no receiver


def _text(data: bytes, node: Any) -> str:
    return " ".join(node_text(data, node).split()) if node is not None else ""


def _global(name: Any) -> bool:
    """``::name``: a C++ qualified identifier with no scope before its ``::``."""
    parent = name.parent
    return (
        parent is not None
        and parent.type == "qualified_identifier"
        and parent.child_by_field_name("scope") is None
        and parent.child_count > 0
        and parent.children[0].type == "::"
    )


def _plain(node: Any) -> bool:
    """A lone identifier."""
    return node.type.endswith("identifier") or node.type in {"constant", "name"}


_SELF = frozenset({"self", "this", "cls", "super", "Self"})  # no definition is named that


def _unquote(text: str) -> str:
    return text.strip().strip("\"'`")


def _last_part(text: str) -> str:
    for sep in ("::", "/", "."):
        text = text.rsplit(sep, 1)[-1]
    return text


def _qualifier_node(name: Any) -> Any:
    """The node before the name in a member or scoped use (None for a plain name)."""
    parent = name.parent
    if parent is None:
        return None
    for field in _QUALIFIER_FIELDS:
        node = parent.child_by_field_name(field)
        if node is not None and node.id != name.id and node.end_byte <= name.start_byte:
            return node
    if parent.type in {"navigation_expression", "navigation_suffix"}:  # Kotlin, Swift: a.b
        head = parent.parent if parent.type == "navigation_suffix" else parent
        first = head.named_children[0] if head is not None and head.named_children else None
        if first is not None and first.end_byte <= name.start_byte:
            return first
    return None


def _scopes(starts: Sequence[int], spans: Sequence[tuple[int, int, int]]) -> list[int | None]:
    """The innermost unit holding each reference (``starts`` ascending), by one sweep over the
    units' byte spans: syntax nodes nest, so the units still open at a reference form a stack.
    A walk up the tree per reference cost its depth twice over (``node.parent`` is itself
    O(depth)): cubic in nesting, as the definitions' walk was
    (RESULTS.md#deep-nesting-and-definition-windows)."""
    out: list[int | None] = []
    stack: list[tuple[int, int, int]] = []
    i = 0
    for start in starts:
        while i < len(spans) and spans[i][0] <= start:
            while stack and stack[-1][1] <= spans[i][0]:
                stack.pop()
            stack.append(spans[i])
            i += 1
        while stack and stack[-1][1] <= start:
            stack.pop()
        out.append(stack[-1][2] if stack else None)
    return out
