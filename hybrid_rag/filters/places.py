"""Filters on a converted document's places: a chunk matches every place it covers.

A chunk of a converted document stores its first unit in ``meta.<kind>`` and, when it spans
several, its last in ``meta.<kind>_end`` (``hybrid_rag/locators.py``): a chunk over slides 2-4 has
``slide = 2, slide_end = 4``. ``slide = 3`` must find it, so a place field is rewritten into the
language's own ``meta.*`` comparisons, which every backend compiles as it is (SQL, Milvus):

==========================  ===================================================================
``page = v``                ``meta.page = v or meta.page <= v and meta.page_end >= v``
``page > v``, ``>= v``      ``meta.page > v or meta.page_end > v``
``page < v``, ``<= v``      ``meta.page < v`` (the first page is the chunk's lowest)
``page != v``               ``meta.page != v and not (meta.page <= v and meta.page_end >= v)``
``page in (a, b)``          ``page = a or page = b``; ``not in``: ``page != a and page != b``
``sheet = Q1``              ``meta.sheet = Q1 or meta.sheet_end = Q1`` (``!=``, ``~``, ``in`` alike)
==========================  ===================================================================

``meta.page`` itself stays the stored first page, ``page_end`` the stored last. A chunk over
three sheets or more matches its first and last sheet (the sheets its metadata names).
"""

from __future__ import annotations

from collections.abc import Sequence

from hybrid_rag.filters.ast import META_PREFIX, NUMBER, And, Compare, FilterExpr, InList, Not, Or


def _ends(place: str) -> tuple[str, str]:
    return f"{META_PREFIX}{place}", f"{META_PREFIX}{place}_end"


def _inside(place: str, kind: str, value: str) -> FilterExpr:
    """The chunk's range reaches past its first unit to ``value`` (false for a one-unit chunk)."""
    first, last = _ends(place)
    if kind == NUMBER:
        return And((Compare(first, "<=", value), Compare(last, ">=", value)))
    return Compare(last, "=", value)


def covers(place: str, kind: str, op: str, values: Sequence[str], *, negated: bool = False) -> FilterExpr:
    """The ``meta.*`` filter for ``place op value`` (``op`` "in" with ``values``, maybe ``negated``);
    see the module docstring. ``kind`` is the place's (``language.PLACES``)."""
    first, last = _ends(place)
    if op == "in":
        if not values:
            return InList(first, (), negated)
        parts = [covers(place, kind, "!=" if negated else "=", [v]) for v in values]
        if len(parts) == 1:
            return parts[0]
        return And(tuple(parts)) if negated else Or(tuple(parts))
    (value,) = values
    if op == "=":
        return Or((Compare(first, "=", value), _inside(place, kind, value)))
    if op == "!=":
        return And((Compare(first, "!=", value), Not(_inside(place, kind, value))))
    if op in (">", ">=", "~"):
        return Or((Compare(first, op, value), Compare(last, op, value)))
    return Compare(first, op, value)  # < and <=
