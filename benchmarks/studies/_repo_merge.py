"""Results of ``repo_search_languages`` run apart (one a language group, so they can run side by
side) merged into one: projects and queries concatenated, each summary group's means weighted by
its number of questions (a project's own groups come from the one run that measured it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

METRICS = ("mrr@10", "success@1", "success@10")


def _combine(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    n = sum(p["n"] for p in parts)
    out: dict[str, float] = {m: round(sum(p[m] * p["n"] for p in parts) / n, 4) for m in METRICS}
    return out | {"n": n}


def merge(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One result of the study from several with disjoint projects."""
    if len(results) == 1:
        return dict(results[0])
    names = [r["config"] for r in results[0]["rows"]]
    names += [r["config"] for res in results[1:] for r in res["rows"] if r["config"] not in names]
    rows = []
    for name in names:
        found = [(res, next((r for r in res["rows"] if r["config"] == name), None)) for res in results]
        have = [(res, r) for res, r in found if r is not None]
        groups: dict[str, list[dict[str, float]]] = {}
        for _, r in have:
            for g, s in r["summary"].items():
                groups.setdefault(g, []).append(s)
        row = {
            "config": name,
            "description": have[0][1]["description"],
            "summary": {g: _combine(parts) for g, parts in groups.items()},
        }
        if len(have) == len(results):  # per-query values only where every run measured the config
            metrics = set.intersection(*(set(r["per_query"]) for _, r in have))
            row["per_query"] = {m: [v for _, r in have for v in r["per_query"][m]] for m in sorted(metrics)}
        rows.append(row)
    return {
        "format": results[0]["format"],
        "protocol": results[0]["protocol"],
        "projects": [p for res in results for p in res["projects"]],
        "query_ids": [q for res in results for q in res["query_ids"]],
        "kinds": [k for res in results for k in res["kinds"]],
        "rows": rows,
        "runs": [_run(res) for res in results],
    }


def _run(result: dict[str, Any]) -> dict[str, Any]:
    env = result.get("environment", {})
    return {
        "projects": [p["name"] for p in result["projects"]],
        "commit": env.get("git", {}).get("commit", "?")[:10],
        "dirty": env.get("git", {}).get("dirty"),
        "date": env.get("date"),
        "seconds": env.get("seconds"),
        "load": [(env.get(k) or ["?"])[0] for k in ("load_average_before", "load_average")],
        "configs": [r["config"] for r in result["rows"]],
    }
