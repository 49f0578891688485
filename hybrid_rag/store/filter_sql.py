"""Filter expressions compiled to SQL: the only place that maps filter fields to the store's columns.

The language itself (grammar, fields, values, globs) is ``retrieval/filters.py``; this module turns
its AST into a SQLAlchemy condition over the ``documents`` and ``chunks`` tables.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, not_, or_

from hybrid_rag.retrieval.filters import (
    DATE,
    FIELDS,
    And,
    Compare,
    FilterExpr,
    InList,
    Not,
    Or,
    check,
    convert,
)
from hybrid_rag.store.schema import CHUNKS, DOCUMENTS

_COLUMNS = {
    name: (CHUNKS if name in ("start_line", "end_line", "token_count") else DOCUMENTS).c[name]
    for name in FIELDS
}


def to_sql(expr: FilterExpr) -> ColumnElement[bool]:
    """The condition over the documents and chunks columns (for ``MetadataStore.chunk_ids_matching``)."""
    if isinstance(expr, And):
        return and_(*(to_sql(i) for i in expr.items))
    if isinstance(expr, Or):
        return or_(*(to_sql(i) for i in expr.items))
    if isinstance(expr, Not):
        return not_(to_sql(expr.item))
    if isinstance(expr, InList):
        kind = check(expr.field, "in", expr.values)
        column = _COLUMNS[expr.field]
        values = [convert(expr.field, kind, "in", v) for v in expr.values]
        return column.not_in(values) if expr.negated else column.in_(values)
    if isinstance(expr, Compare):
        op = "=" if expr.op == "==" else expr.op
        kind = check(expr.field, op, [expr.value])
        return _compare(_COLUMNS[expr.field], kind, op, convert(expr.field, kind, op, expr.value))
    raise TypeError(f"not a filter expression: {expr!r}")


def _compare(column: ColumnElement, kind: str, op: str, value: object) -> ColumnElement[bool]:
    if op == "~":
        return column.regexp_match(value)
    if kind == DATE:
        start, end = value  # type: ignore[misc]
        if end is not None:  # a whole day: [start, end)
            return {
                "=": and_(column >= start, column < end),
                "!=": or_(column < start, column >= end),
                ">": column >= end,
                ">=": column >= start,
                "<": column < start,
                "<=": column < end,
            }[op]
        value = start
    return {
        "=": lambda: column == value,
        "!=": lambda: column != value,
        ">": lambda: column > value,
        ">=": lambda: column >= value,
        "<": lambda: column < value,
        "<=": lambda: column <= value,
    }[op]()
