"""The filter language (``filters/``) compiled to a Milvus boolean expression.

Both Milvus collections of a version hold each chunk's filterable fields (``FILTER_FIELDS``), so a
filter runs inside Milvus as a prefilter of the ANN or BM25 search: k hits come back whenever k
chunks match. The expression means exactly what ``store/filter_sql.py`` means in SQL (tested: on
random filters the ids Milvus matches equal the ids the store matches). Details:

* text fields compare exactly, ``source_type`` folded to lower case as the parser does;
* the number fields are integers in the store, so a bound with a fraction is rounded the way
  the comparison means it (``size > 10.5`` is ``size >= 11``, ``size = 10.5`` matches nothing);
* dates: ``mtime`` is stored as unix seconds (float), ``ingested_at`` as integer microseconds
  since the epoch (UTC), so a day (``= 2026-01-01``) is a half-open range, as in SQL;
* globs become ``like`` patterns where that is exact: ``**`` is ``%``, and ``*`` is ``%`` where
  whatever precedes it may end anywhere (the start of a pattern without a leading ``/``, or
  right after ``**``): ``*.py``, ``src/**``, ``docs/**/*.md`` compile; ``src/*.py`` (``*`` must
  stop at ``/``) and any ``?`` do not, since ``like`` has no "any character but ``/``".
  ``to_milvus`` then answers None, and the caller sends the store's matching ids instead
  (``chunk_id in [...]``: still a prefilter, only a longer expression).

``meta.*`` fields: both collections hold each chunk's metadata in the JSON field ``meta``
(``milvus_meta``: the chunk's own keys over its document's at every depth, as SQL's per-path
coalesce; a JSON null stored as an object, present yet equal to nothing, as SQLite treats it).
``meta.a.b`` is ``meta["a"]["b"]``; Milvus compares JSON values type-strictly, as the SQL does:
numbers with numbers, text with text, ``=`` / ``in`` also an element of a list
(``json_contains_any``), and each condition is ``exists meta[...] and ...`` so that a chunk without
the key matches nothing, not even ``!=``. A ``not`` over a meta ``<`` / ``>`` (Milvus leaves a value
of another type out of both ``x < 1`` and ``not (x < 1)``), ISO dates (dates in SQL) and ``~`` on a
meta key have no Milvus form: ``to_milvus`` answers None for them.
"""

from __future__ import annotations

import calendar
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from hybrid_rag.filters import FIELDS, check, convert, normalize_glob
from hybrid_rag.filters.ast import DATE, META, META_PREFIX, NUMBER, And, Compare, FilterExpr, InList, Not, Or

# Every chunk id is a positive SQLite row id: these are the constant false and true.
FALSE = "chunk_id < 0"
TRUE = "chunk_id >= 0"
MAX_LIKE_ALTERNATIVES = 16  # a glob with many ``/**/`` expands to 2^n patterns; past this, no push-down
INT_FIELDS = ("size", "start_line", "end_line", "token_count")
JSON_NULL = {"__null__": True}  # a JSON null in ``meta``: a key that is there, equal to nothing


class _NotExpressible(Exception):
    """A glob that ``like`` cannot state exactly."""


def to_milvus(expr: FilterExpr) -> str | None:
    """The Milvus boolean expression that matches what ``expr`` matches, or None when a glob in it
    has no exact ``like`` form.

    >>> to_milvus(parse_filter("source_type=code and path ~ 'src/**'"))  # doctest: +SKIP
    '(source_type == "code" and (path like "src/%" or path like "%/src/%"))'
    """
    try:
        return _compile(expr)
    except _NotExpressible:
        return None


def ids_expr(ids: Sequence[int] | np.ndarray, field: str = "chunk_id") -> str:
    """``field in [...]`` for integer ids (the fallback prefilter, and lookups by id)."""
    values = np.asarray(ids, dtype=np.int64).reshape(-1)
    return f"{field} in [{','.join(map(str, values.tolist()))}]"


def string_literal(value: str) -> str:
    """A double-quoted Milvus string literal (C-style escapes)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def unix_micros(when: datetime) -> int:
    """A naive-UTC (or aware) datetime as integer microseconds since the epoch, exactly."""
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return calendar.timegm(when.timetuple()) * 1_000_000 + when.microsecond


def _column(field: str) -> str:
    """The Milvus field of a filter field other than ``meta.*`` (``_meta_condition`` has those)."""
    if field not in FIELDS:
        raise ValueError(f"no Milvus field for filter field {field!r}")
    return field


def _compile(expr: FilterExpr) -> str:
    if isinstance(expr, And):
        return "(" + " and ".join(_compile(i) for i in expr.items) + ")"
    if isinstance(expr, Or):
        return "(" + " or ".join(_compile(i) for i in expr.items) + ")"
    if isinstance(expr, Not):
        if _orders_meta(expr.item):  # Milvus: a JSON value of another type is neither < nor >=
            raise _NotExpressible("not over a meta comparison")
        return f"not ({_compile(expr.item)})"
    if isinstance(expr, InList):
        kind = check(expr.field, "in", expr.values)
        values = [convert(expr.field, kind, "in", v) for v in expr.values]
        if kind == META:
            return _meta_condition(expr.field, "!=" if expr.negated else "=", values)  # type: ignore[arg-type]
        if expr.field in INT_FIELDS:  # an integer column never equals a fraction
            values = [int(v) for v in values if float(v).is_integer()]  # type: ignore[arg-type]
        literals = ", ".join(string_literal(v) if isinstance(v, str) else repr(v) for v in values)
        matched = f"{_column(expr.field)} in [{literals}]"
        return f"not ({matched})" if expr.negated else matched
    if isinstance(expr, Compare):
        op = "=" if expr.op == "==" else expr.op
        kind = check(expr.field, op, [expr.value])
        if kind == META:
            return _meta_condition(expr.field, op, [convert(expr.field, kind, op, expr.value)])  # type: ignore[list-item]
        return _compare(expr.field, kind, op, convert(expr.field, kind, op, expr.value), expr.value)
    raise TypeError(f"not a filter expression: {expr!r}")


def _compare(field: str, kind: str, op: str, value: object, raw: str) -> str:
    column = _column(field)
    if op == "~":
        patterns = glob_like_patterns(raw)
        if patterns is None:
            raise _NotExpressible(raw)
        return "(" + " or ".join(f"{column} like {string_literal(p)}" for p in patterns) + ")"
    if kind == DATE:
        start, end = value  # type: ignore[misc]
        start, end = (_date_value(field, start), None if end is None else _date_value(field, end))
        if end is not None:  # a whole day: [start, end)
            return {
                "=": f"({column} >= {start} and {column} < {end})",
                "!=": f"({column} < {start} or {column} >= {end})",
                ">": f"{column} >= {end}",
                ">=": f"{column} >= {start}",
                "<": f"{column} < {start}",
                "<=": f"{column} < {end}",
            }[op]
        return f"{column} {'==' if op == '=' else op} {start}"
    if kind == NUMBER and field in INT_FIELDS and not float(value).is_integer():  # type: ignore[arg-type]
        number = float(value)  # type: ignore[arg-type]
        return {
            "=": FALSE,
            "!=": TRUE,
            ">": f"{column} >= {math.ceil(number)}",
            ">=": f"{column} >= {math.ceil(number)}",
            "<": f"{column} <= {math.floor(number)}",
            "<=": f"{column} <= {math.floor(number)}",
        }[op]
    literal = string_literal(value) if isinstance(value, str) else repr(value)
    return f"{column} {'==' if op == '=' else op} {literal}"


def _orders_meta(expr: FilterExpr) -> bool:
    """Whether ``expr`` holds a ``<``, ``<=``, ``>`` or ``>=`` on a meta key (three-valued in Milvus)."""
    if isinstance(expr, (And, Or)):
        return any(_orders_meta(i) for i in expr.items)
    if isinstance(expr, Not):
        return _orders_meta(expr.item)
    return (
        isinstance(expr, Compare) and expr.field.startswith(META_PREFIX) and expr.op in ("<", "<=", ">", ">=")
    )


def milvus_meta(document: Mapping[str, Any], chunk: Mapping[str, Any]) -> dict[str, Any]:
    """A chunk's ``meta`` field: its own keys over its document's at every depth; a null, and a true or
    false outside a list, stored as objects (present, equal to nothing), as SQLite compares them."""

    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, Mapping) and isinstance(over, Mapping):
            return {**base, **{k: merge(base[k], v) if k in base else v for k, v in over.items()}}
        return over

    def stored(value: Any, in_list: bool = False) -> Any:
        if value is None:
            return dict(JSON_NULL)
        if isinstance(value, bool):  # SQLite: true is no number, yet a list's true is 1 (json_each)
            return int(value) if in_list else {"__bool__": value}
        if isinstance(value, Mapping):
            return {str(k): stored(v) for k, v in value.items()}
        return [stored(v, True) for v in value] if isinstance(value, list) else value

    return stored(merge(dict(document), dict(chunk)))


def _meta_condition(field: str, op: str, typed: Sequence[tuple[str, object]]) -> str:
    """``op`` (``=`` / ``!=`` against any of ``typed``, or a comparison with one) on a meta key."""
    if any(kind not in (NUMBER, "text") for kind, _ in typed):
        raise _NotExpressible(field)  # ISO dates and globs: compared as dates / regexes in SQL
    path = "meta" + "".join(f"[{string_literal(k)}]" for k in field[len(META_PREFIX) :].split("."))
    literals = [_json_literal(value) for _, value in typed]
    if op in ("=", "!="):
        equal = " or ".join(
            [*(f"{path} == {v}" for v in literals), f"json_contains_any({path}, [{', '.join(literals)}])"]
        )
        return f"(exists {path} and {'not ' if op == '!=' else ''}({equal}))"
    return f"(exists {path} and {path} {op} {literals[0]})"


def _json_literal(value: object) -> str:
    if isinstance(value, str):
        return string_literal(value)
    number = float(value)  # type: ignore[arg-type]
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def _date_value(field: str, value: object) -> str:
    """A date bound in the stored unit: unix seconds for ``mtime``, integer microseconds otherwise."""
    if isinstance(value, datetime):
        return str(unix_micros(value))
    return repr(float(value))  # type: ignore[arg-type]


def glob_like_patterns(pattern: str) -> list[str] | None:
    """The ``like`` patterns whose union is exactly the glob (``filters/`` semantics), or
    None when there is none. ``%`` and ``_`` in the glob are escaped with a backslash."""
    if not pattern:
        return None
    anchored = pattern.startswith("/")
    pattern = normalize_glob(pattern)  # runs of "*" collapsed as every backend matches them
    alternatives = [""] if anchored else ["", "%/"]  # the start, or just after any "/"
    absorbs = not anchored  # what precedes may end anywhere, so a following "*" may be "%"
    i = 0
    while i < len(pattern):
        if pattern.startswith("/**/", i):
            pieces, i, absorbs = ("/", "/%/"), i + 4, True
        elif i == 0 and pattern.startswith("**/"):
            pieces, i, absorbs = ("", "%/"), i + 3, True
        elif pattern.startswith("**", i) or (pattern[i] == "*" and absorbs):
            pieces, i, absorbs = ("%",), i + (2 if pattern.startswith("**", i) else 1), True
        elif pattern[i] in "*?":
            return None
        else:
            char = pattern[i]
            pieces, i, absorbs = ("\\" + char if char in "%_\\" else char,), i + 1, False
        alternatives = [a + p for a in alternatives for p in pieces]
        if len(alternatives) > MAX_LIKE_ALTERNATIVES:
            return None
    return _without_subsumed(alternatives)


def _without_subsumed(patterns: list[str]) -> list[str]:
    """Drop repeats, and ``%/%X`` when ``%X`` is there too (which matches all it matches); keep order."""
    unique = list(dict.fromkeys(patterns))
    return [p for p in unique if not (p.startswith("%/%") and p[2:] in unique)]
