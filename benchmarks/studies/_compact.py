"""Compact per-query results: the query ids once per group, one array a metric in that order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def compact_per_query(
    rows: Sequence[Mapping[str, Any]], group: str, field: str = "per_query"
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """``rows`` with ``field`` ({metric: {query id: value}}) as {metric: [value, ...]}, and the
    query ids of each ``group`` value (e.g. the dataset) in the arrays' order, sorted. Entries that
    are not a mapping (a list of query ids, say) are kept as they are."""
    ids: dict[str, list[str]] = {}
    out = []
    for row in rows:
        per_query = row.get(field) or {}
        first = next((v for v in per_query.values() if isinstance(v, Mapping)), None)
        if first is None:
            out.append(dict(row))
            continue
        order = ids.setdefault(row[group], sorted(first))
        arrays = {m: [v[q] for q in order] if isinstance(v, Mapping) else v for m, v in per_query.items()}
        out.append({**row, field: arrays})
    return out, ids


def expand_per_query(
    rows: Sequence[Mapping[str, Any]], ids: Mapping[str, Sequence[str]], group: str, field: str = "per_query"
) -> list[dict[str, Any]]:
    """The inverse of :func:`compact_per_query`: {metric: {query id: value}} again (a list as long
    as the ids is taken for an array of values)."""
    out = []
    for row in rows:
        per_query = row.get(field) or {}
        order = ids.get(row[group], [])
        expanded = {
            m: dict(zip(order, v, strict=True)) if isinstance(v, list) and len(v) == len(order) else v
            for m, v in per_query.items()
        }
        out.append({**row, field: expanded} if per_query else dict(row))
    return out
