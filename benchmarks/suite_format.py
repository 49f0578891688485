"""The suite's results file: written compact, read back whole.

``hybrid-rag-suite/2`` keeps each dataset's judged query ids once (``query_ids``), each result's
per-query values as one array a metric in that order, and the settings once (``settings``: the
base; a result keeps only its ``overrides``). ``expand`` turns it (or a ``/1`` file, which held a
dict a metric and the full settings in every row) into the in-memory shape report.py reads.
"""

from __future__ import annotations

import copy
from typing import Any

FORMAT = "hybrid-rag-suite/2"


def compact(suite: dict[str, Any]) -> dict[str, Any]:
    """A written suite: ids once per dataset, arrays per metric, settings once."""
    out = copy.deepcopy(suite)
    ids: dict[str, list[str]] = {}
    settings = None
    for r in out["results"]:
        per_query = r["per_query"]
        if isinstance(next(iter(per_query.values()), []), dict):  # /1: a dict a metric
            order = ids.setdefault(r["dataset"], sorted(next(iter(per_query.values()))))
            r["per_query"] = {m: [values[q] for q in order] for m, values in per_query.items()}
        settings = settings or r.pop("settings", None)
        r.pop("settings", None)
    out["format"] = FORMAT
    out["query_ids"] = {**out.get("query_ids", {}), **ids}
    if settings is not None:
        out["settings"] = settings
    return out


def expand(suite: dict[str, Any]) -> dict[str, Any]:
    """The in-memory shape: per-query values as {metric: {query id: value}}."""
    if suite.get("format") != FORMAT:
        return suite
    out = copy.deepcopy(suite)
    for r in out["results"]:
        order = out["query_ids"][r["dataset"]]
        r["per_query"] = {m: dict(zip(order, values, strict=True)) for m, values in r["per_query"].items()}
    return out
