"""A unit's doc: the comments and attributes attached above it, or its docstring, cleaned.

A comment is attached when nothing but other attached comments or attributes (``#[derive]``,
``@Override``) lies between it and the definition, with no blank line between and no code before it
on its line. ``//!`` and ``/*!`` document the enclosing module, not the next item.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from hybrid_rag.code.grammars import Grammar
from hybrid_rag.code.links import Plain

_ATTRIBUTES = frozenset({"attribute_item", "attribute", "annotation", "decorator", "marker_annotation"})
_COMMENT_LINE = re.compile(r"^\s*(?:/{2,}!?|/\*+!?|\*+/|\*(?!/)|#+!?|--+|;+)\s?")
_COMMENT_END = re.compile(r"\s*\*+/\s*$")
_DOC_TAGS = re.compile(r"</?(?:summary|remarks|para|returns)>")  # C# XML doc comments


def node_text(data: bytes, node: Any) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def _attached(outer: Any, links: Any = Plain) -> list[Any]:
    """Comments and attributes right above ``outer`` (nearest first), with no blank line between
    and none that trails code on its own line. ``links`` answers parents and previous siblings
    (``hybrid_rag.code.links``)."""
    out: list[Any] = []
    top_row = outer.start_point[0]
    anchor = outer  # a comment above a block's first statement can sit outside the block node
    while True:
        up = links.parent(anchor)
        if links.prev_sibling(anchor) is not None or up is None or up.start_byte != anchor.start_byte:
            break
        anchor = up
    sib = links.prev_sibling(anchor)
    while sib is not None and ("comment" in sib.type or sib.type in _ATTRIBUTES):
        if sib.end_point[0] < top_row - 1:
            break  # a blank line between
        before = links.prev_sibling(sib)
        if before is not None and before.end_point[0] == sib.start_point[0] and "comment" not in before.type:
            break  # a comment trailing the code before it
        out.append(sib)
        top_row = sib.start_point[0]
        sib = before
    return out


def attached_start(outer: Any, links: Any = Plain) -> Any:
    """The first node of a unit: its topmost attached comment or attribute, else itself."""
    attached = [n for n in _attached(outer, links) if not _inner_doc(n)]
    return attached[-1] if attached else outer


def _inner_doc(node: Any) -> bool:
    """``//!`` and ``/*!`` document the enclosing module, not the next item."""
    text = node.text or b""
    return text.startswith((b"//!", b"/*!"))


def doc_text(grammar: Grammar, node: Any, outer: Any, data: bytes, links: Any = Plain) -> str:
    """The unit's doc: its docstring (Python), else the comments right above it, markers off."""
    if grammar.docstrings:
        docstring = _docstring(node, data)
        if docstring:
            return docstring
    comments = [n for n in reversed(_attached(outer, links)) if "comment" in n.type and not _inner_doc(n)]
    return clean_comment("\n".join(node_text(data, n) for n in comments))


def _docstring(node: Any, data: bytes) -> str:
    body = node.child_by_field_name("body")
    if body is None or not body.named_children:
        return ""
    first = body.named_children[0]
    if (
        first.type == "expression_statement"
        and first.named_children
        and first.named_children[0].type == "string"
    ):
        return clean_docstring(node_text(data, first.named_children[0]))
    return ""


def clean_docstring(literal: str) -> str:
    """A Python string literal's text: prefix and quotes off, indentation cleaned."""
    body = literal.lstrip("rRbBuUfF")
    for quote in ('"""', "'''", '"', "'"):
        if body.startswith(quote) and body.endswith(quote) and len(body) >= 2 * len(quote):
            body = body[len(quote) : -len(quote)]
            break
    return inspect.cleandoc(body)


def clean_comment(text: str) -> str:
    """Comment lines without their markers (``///``, ``//``, ``/** */``, ``*``, ``#``, ``--``).

    >>> clean_comment("/**\\n * Adds two numbers.\\n * @param a first\\n */")
    'Adds two numbers.\\n@param a first'
    """
    lines = []
    for line in text.splitlines():
        line = _COMMENT_END.sub("", line)
        line = _DOC_TAGS.sub("", _COMMENT_LINE.sub("", line, count=1))
        lines.append(line.rstrip())
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)
