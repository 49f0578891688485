"""The filter language's syntax tree (``language.py`` parses into it; ``places.py``,
``store/filter_sql.py`` and ``indices/milvus/filters.py`` read or build it), and the field kinds
every module of the package names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

TEXT, SOURCE, NUMBER, DATE, META = "text", "source_type", "number", "date", "meta"  # field kinds
META_PREFIX = "meta."
_BARE = re.compile(r"[^\s(),'\"]+")  # a value written without quotes


def _quote(value: str) -> str:
    if value and _BARE.fullmatch(value) and value.lower() not in ("and", "or", "not", "in"):
        return value
    return f'"{value}"' if "'" in value else f"'{value}'"


@dataclass(frozen=True)
class Compare:
    """``field op value``; ``op`` is one of ``= != > >= < <= ~``; ``value`` as written (unquoted)."""

    field: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.field} {self.op} {_quote(self.value)}"


@dataclass(frozen=True)
class InList:
    """``field in (v1, v2)`` or, negated, ``field not in (...)``; an empty list matches nothing."""

    field: str
    values: tuple[str, ...]
    negated: bool = False

    def __str__(self) -> str:
        return f"{self.field} {'not in' if self.negated else 'in'} ({', '.join(map(_quote, self.values))})"


@dataclass(frozen=True)
class And:
    items: tuple[FilterExpr, ...]

    def __str__(self) -> str:
        return " and ".join(f"({i})" if isinstance(i, Or) else str(i) for i in self.items)


@dataclass(frozen=True)
class Or:
    items: tuple[FilterExpr, ...]

    def __str__(self) -> str:
        return " or ".join(str(i) for i in self.items)


@dataclass(frozen=True)
class Not:
    item: FilterExpr

    def __str__(self) -> str:
        return f"not ({self.item})" if isinstance(self.item, (And, Or)) else f"not {self.item}"


FilterExpr = Union[Compare, InList, And, Or, Not]  # noqa: UP007 (a runtime alias; py3.10 target)
