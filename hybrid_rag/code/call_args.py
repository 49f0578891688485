"""What a call's argument list says, stored with the call (C, C++, Java) for the resolution rules
of ``symbols/overloads.py``: how many arguments it passes (overloads told apart by count) and
which are plain names (C++ argument-dependent lookup: ``format_as(w)`` where ``w``'s type lives in
a namespace). A call stores them in its ``module`` field, which no call used, written
``(2) a,b``: the count, then the plain-name arguments in order (none: the count alone).

>>> encode(2, ["a", "b"]), encode(0, []), decode("(2) a,b"), decode("(0)"), decode("")
('(2) a,b', '(0)', (2, ('a', 'b')), (0, ()), (None, ()))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hybrid_rag.code.comments import node_text

LANGUAGES = frozenset({"c", "cpp", "java"})  # where overloads and ADL are read from the arguments
_CALLS = {"call_expression": "function", "method_invocation": "name"}  # the node and its callee field
_UP = 4  # ``a::b::f<T>(x)``: the name is at most this deep under its call
_ENCODED = re.compile(r"^\((\d+)\)(?: ([\w$,]*))?$")
MAX_NAMED = 4


def encode(count: int, names: Sequence[str]) -> str:
    shown = ",".join(names[:MAX_NAMED])
    return f"({count}) {shown}" if shown else f"({count})"


def decode(module: str) -> tuple[int | None, tuple[str, ...]]:
    """(argument count or None when not recorded, the plain-name arguments)."""
    m = _ENCODED.match(module or "")
    if not m:
        return None, ()
    return int(m.group(1)), tuple(n for n in (m.group(2) or "").split(",") if n)


def of_call(name: Any, data: bytes) -> str:
    """The encoded argument list of the call whose callee's name node is ``name`` ("" when the
    name is not a call's callee: ``new``, a base class, a call through an expression)."""
    child, node = name, name.parent
    for _ in range(_UP):
        if node is None:
            return ""
        field = _CALLS.get(node.type)
        if field is not None:
            callee = node.child_by_field_name(field)
            if callee is None or callee.id != child.id:
                return ""
            args = node.child_by_field_name("arguments")
            if args is None:
                return ""
            items = [c for c in args.named_children if c.type != "comment"]
            named = [node_text(data, c) for c in items if c.type == "identifier"]
            return encode(len(items), named)
        if node.type not in ("field_expression", "qualified_identifier", "template_function"):
            return ""
        child, node = node, node.parent
    return ""
