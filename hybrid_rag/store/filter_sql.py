"""Filter expressions compiled to SQL: the only place that maps filter fields to the store's columns.

The language itself (grammar, fields, values, globs) is ``filters/``; this module turns
its AST into a SQLAlchemy condition over the ``documents`` and ``chunks`` tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Select,
    and_,
    column,
    exists,
    false,
    func,
    literal,
    not_,
    or_,
    select,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import InternalTraversal

from hybrid_rag.deadline import check as check_deadline
from hybrid_rag.filters import FIELDS, check, convert, glob_to_regex
from hybrid_rag.filters.ast import DATE, META, META_PREFIX, And, Compare, FilterExpr, InList, Not, Or
from hybrid_rag.filters.globs import SQL_FUNCTION
from hybrid_rag.store.schema import CHUNKS, DOCUMENTS

_COLUMNS = {
    name: (CHUNKS if name in ("start_line", "end_line", "token_count", "lang") else DOCUMENTS).c[name]
    for name in FIELDS
}


LARGE_SET = 100  # an IN list longer than this is bound as one JSON array (SQLite's json_each)
_FLAT = 32  # and / or terms per level of the balanced tree (SQLite's expression depth is 1000)


def to_sql(expr: FilterExpr) -> ColumnElement[bool]:
    """The condition over the documents and chunks columns (for ``MetadataStore.chunk_ids_matching``).

    However long the filter, the SQL stays shallow: ``or`` chains of ``=`` on one field become
    one ``IN``, a long ``IN`` list is one bound JSON array, and other long ``and`` / ``or``
    chains become a balanced tree."""
    if isinstance(expr, And):
        return _balanced(and_, [_checked(to_sql, i) for i in expr.items])
    if isinstance(expr, Or):
        return _balanced(or_, [_checked(to_sql, i) for i in _merge_equalities(expr.items)])
    if isinstance(expr, Not):
        return not_(to_sql(expr.item))
    if isinstance(expr, InList):
        kind = check(expr.field, "in", expr.values)
        typed = [convert(expr.field, kind, "in", v) for v in expr.values]
        if kind == META:
            key = _MetaKey(expr.field)
            matched = key.equals_any(typed)  # type: ignore[arg-type]
            return and_(key.present, not_(matched)) if expr.negated else matched
        column = _COLUMNS[expr.field]
        values = _value_set(typed) if len(typed) > LARGE_SET else typed
        return column.not_in(values) if expr.negated else column.in_(values)
    if isinstance(expr, Compare):
        op = "=" if expr.op == "==" else expr.op
        kind = check(expr.field, op, [expr.value])
        if kind == META:
            return _MetaKey(expr.field).compare(op, convert(expr.field, kind, op, expr.value))
        return _compare(_COLUMNS[expr.field], kind, op, convert(expr.field, kind, op, expr.value))
    raise TypeError(f"not a filter expression: {expr!r}")


def _checked(fn: Callable[[FilterExpr], ColumnElement[bool]], item: FilterExpr) -> ColumnElement[bool]:
    """``fn(item)`` after a look at the request's deadline (``hybrid_rag/deadline.py``): building a
    chain of thousands of ``meta.`` comparisons takes seconds, and a request that timed out stops."""
    check_deadline()
    return fn(item)


def _merge_equalities(items: Sequence[FilterExpr]) -> list[FilterExpr]:
    """``a = x or a = y or a in (z)`` as ``a in (x, y, z)``, other items kept, in first-seen order."""
    merged: dict[str, list[str]] = {}
    out: list[FilterExpr | str] = []
    for item in items:
        values = None
        if isinstance(item, Compare) and item.op in ("=", "==") and FIELDS.get(item.field) != DATE:
            values = [item.value]  # (a date's "=" is a whole day, not one value: kept as it is)
        elif isinstance(item, InList) and not item.negated:
            values = list(item.values)
        if values is None:
            out.append(item)
            continue
        if item.field not in merged:
            merged[item.field] = []
            out.append(item.field)
        merged[item.field].extend(values)
    return [InList(i, tuple(merged[i])) if isinstance(i, str) else i for i in out]


def _balanced(
    join: Callable[..., ColumnElement[bool]], terms: list[ColumnElement[bool]]
) -> ColumnElement[bool]:
    if len(terms) <= _FLAT:
        return join(*terms)
    step = -(-len(terms) // _FLAT)
    # NOT (NOT (...)): the same truth value (NULL too), and parentheses SQLAlchemy keeps (it
    # flattens nested and_ / or_, and drops a plain Grouping, back into one long chain); the outer
    # NOT compiled after a look at the request's deadline
    groups = (_balanced(join, terms[i : i + step]) for i in range(0, len(terms), step))
    return join(*(CheckedNot(not_(g)) for g in groups))


class CheckedNot(ColumnElement[bool]):
    """``NOT (condition)``, compiled after a look at the request's deadline: compiling a filter of
    thousands of ``meta.`` comparisons takes seconds, and a request that timed out stops there.
    Never regrouped (SQLite would get ``(...) = 1`` and reorder the terms inside)."""

    __visit_name__ = "hybrid_rag_checked_not"
    inherit_cache = True
    _traverse_internals: ClassVar[list[tuple[str, Any]]] = [("condition", InternalTraversal.dp_clauseelement)]
    type = Boolean()

    def __init__(self, condition: ColumnElement[bool]) -> None:
        self.condition = condition

    def self_group(self, against: object = None) -> CheckedNot:
        return self


@compiles(CheckedNot)
def _compile_checked_not(element: CheckedNot, compiler: SQLCompiler, **kw: object) -> str:
    check_deadline()
    return f"NOT ({compiler.process(element.condition, **kw)})"


def _value_set(values: Sequence[object]) -> Select:
    """``SELECT value FROM json_each(:values)``: any number of values in one bound parameter."""
    return select(column("value", is_literal=True)).select_from(
        func.json_each(literal(json.dumps(list(values))))
    )


class GlobMatch(FunctionElement[bool]):
    """``value ~ glob``: on SQLite the linear-time matcher (``hybrid_rag_glob``, registered on every
    connection by the store), elsewhere (PostgreSQL) the glob's regular expression."""

    type = Boolean()
    name = SQL_FUNCTION
    inherit_cache = True

    def __init__(self, value: ColumnElement, glob: str) -> None:
        super().__init__(literal(glob), value, literal(glob_to_regex(glob)))


@compiles(GlobMatch, "sqlite")
def _glob_sqlite(element: GlobMatch, compiler: SQLCompiler, **kw: object) -> str:
    glob, value, _ = element.clauses.clauses
    return f"{SQL_FUNCTION}({compiler.process(glob, **kw)}, {compiler.process(value, **kw)})"


@compiles(GlobMatch)
def _glob_regex(element: GlobMatch, compiler: SQLCompiler, **kw: object) -> str:
    _, value, regex = element.clauses.clauses
    return compiler.process(value.regexp_match(regex), **kw)  # type: ignore[attr-defined]


def _compare(column: ColumnElement, kind: str, op: str, value: object) -> ColumnElement[bool]:
    if op == "~":
        return GlobMatch(column, value)  # type: ignore[arg-type]
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


_JULIAN_UNIX_EPOCH = 2440587.5  # the Julian day of 1970-01-01T00:00Z: SQLite's julianday() scale


def _julian(when: datetime) -> float:
    return (when - datetime(1970, 1, 1)).total_seconds() / 86400.0 + _JULIAN_UNIX_EPOCH


class _MetaKey:
    """``meta.<key>`` over a chunk's metadata, then its document's (``filters/``)."""

    def __init__(self, field: str) -> None:
        parts = field[len(META_PREFIX) :].split(".")
        path = "$" + "".join('."' + p.replace('"', '""') + '"' for p in parts)
        sources = (CHUNKS.c.meta, DOCUMENTS.c.meta)
        self.value = func.coalesce(*(func.json_extract(m, path) for m in sources))
        self.type = func.coalesce(*(func.json_type(m, path) for m in sources))
        self.present = self.type.is_not(None)

    def equals_any(self, typed: Sequence[tuple[str, object]]) -> ColumnElement[bool]:
        """The key's value is one of ``typed`` (or a list holding one), numbers and texts each
        matched as one bound set, dates one by one."""
        terms = [self.equals(t) for t in typed if t[0] == "date"]
        for kind in ("number", "text"):
            values = [v for k, v in typed if k == kind]
            if values:
                scalar = self._typed(kind) & self.value.in_(_value_set(values))
                element = column("value", is_literal=True)
                in_list = exists(
                    select(literal(1))
                    .select_from(func.json_each(self.value).alias("je"))
                    .where(element.in_(_value_set(values)))
                )
                terms.append(and_(self.present, or_(scalar, and_(self.type == "array", in_list))))
        return _balanced(or_, terms) if terms else false()

    def equals(self, typed: tuple[str, object]) -> ColumnElement[bool]:
        """The key's value is ``typed``, or a list holding it; false (never NULL) without the key."""
        kind, value = typed
        if kind == "date":
            return and_(self.present, self._date("=", value))
        scalar = self._typed(kind) & (self.value == value)
        element = column("value", is_literal=True)
        in_list = exists(
            select(literal(1)).select_from(func.json_each(self.value).alias("je")).where(element == value)
        )
        return and_(self.present, or_(scalar, and_(self.type == "array", in_list)))

    def compare(self, op: str, typed: tuple[str, object]) -> ColumnElement[bool]:
        """``op`` against the key's value; false (never NULL, so ``not`` works) without the key."""
        kind, value = typed
        if op == "=":
            return self.equals(typed)
        if op == "!=":
            return and_(self.present, not_(self.equals(typed)))
        if kind == "glob":
            inner = and_(self.type == "text", GlobMatch(self.value, value))  # type: ignore[arg-type]
        elif kind == "date":
            inner = self._date(op, value)
        else:
            inner = and_(self._typed(kind), _compare(self.value, kind, op, value))
        return and_(self.present, inner)

    def _typed(self, kind: str) -> ColumnElement[bool]:
        return self.type.in_(("integer", "real")) if kind == "number" else self.type == "text"

    def _date(self, op: str, when: object) -> ColumnElement[bool]:
        start, end = when  # type: ignore[misc]
        days = (_julian(start), None if end is None else _julian(end))
        return and_(self.type == "text", _compare(func.julianday(self.value), DATE, op, days))
