"""A receiver's written type seen through type aliases and smart pointers, for ``bindings.py``
(RESULTS.md#cpp-unread-project): ``Option_p opt; opt->get_name()`` where ``using Option_p =
std::unique_ptr<Option>;`` calls ``Option::get_name``.

* an alias definition (kind ``type``: C++ ``using X = Y;``, ``typedef Y X;``, TypeScript ``type X =
  Y``) stands for the type it names, followed a few steps;
* C++ ``std::unique_ptr<T>``, ``std::shared_ptr<T>``, ``std::optional<T>`` forward ``->`` to ``T``;
  a call of one of their own members (``p.reset()``, ``p.get()``) is theirs, never ``T``'s (the
  parse does not keep ``.`` apart from ``->``, so such a name gives no type).

>>> aliased("using Option_p = std::unique_ptr<Option>;"), aliased("typedef Widget W2;")
('std::unique_ptr<Option>', 'Widget')
>>> aliased("type PoolRef = Pool;"), aliased("typedef void (*Fn)(int);")
('Pool', '')
>>> pointee("std::unique_ptr<Option>", "get_name"), pointee("std::unique_ptr<Option>", "reset")
('Option', None)
>>> pointee("const Foo&", "x")
'const Foo&'
"""

from __future__ import annotations

import re

MAX_STEPS = 4  # aliases of aliases followed
_USING = re.compile(
    r"^(?:template\s*<.*?>\s*)?(?:export\s+)?(?:using|type)\s+[A-Za-z_$][\w$]*\s*(?:<[^=]*>)?\s*=\s*(.+?);?$"
)
_TYPEDEF = re.compile(r"^typedef\s+(.+?)\s+[A-Za-z_]\w*\s*;?$")
_SMART = re.compile(r"^(?:const\s+)?(?:::)?(?:std\s*::\s*)?(unique_ptr|shared_ptr|optional)\s*<(.*)>[\s&*]*$")
_OWN = frozenset(
    [
        "get",
        "reset",
        "release",
        "swap",
        "use_count",
        "get_deleter",
        "owner_before",
        "unique",
        "value",
        "has_value",
        "value_or",
        "emplace",
    ]
)


def aliased(signature: str) -> str:
    """The type an alias definition's signature names ("" when it is not an alias of a type)."""
    text = " ".join(signature.split())
    m = _USING.match(text)
    if m:
        return m.group(1).strip()
    m = _TYPEDEF.match(text)
    if m and "(" not in m.group(1):
        return m.group(1).strip()
    return ""


def pointee(written: str, called: str) -> str | None:
    """The type a call on a receiver of type ``written`` runs a member of: a smart pointer's
    ``T`` (None when ``called`` is the pointer's own member), else ``written`` itself."""
    m = _SMART.match(" ".join(written.split()))
    if m is None:
        return written
    if called in _OWN:
        return None
    depth, first = 0, []
    for ch in m.group(2):
        if ch == "," and depth == 0:
            break
        depth += ch == "<"
        depth -= ch == ">"
        first.append(ch)
    return "".join(first).strip()
