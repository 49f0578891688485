"""The suite's results file and its tables: written compact, read back whole, rendered as markdown.

``hybrid-rag-suite/2`` keeps each dataset's judged query ids once (``query_ids``), each result's
per-query values (``PER_QUERY_KEPT``: what the tables test query by query) as one array a metric
in that order, the trace notes once (``notes``) and the settings once (``settings``: the base; a
result keeps only its ``overrides``). ``expand`` turns it (or a ``/1`` file, which held a
dict a metric and the full settings in every row) into the in-memory shape the tables read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hybrid_rag.evaluation.metrics import Comparison, EvalReport, compare

METRICS = ("ndcg@10", "mrr@10", "precision@3", "recall@50", "recall@100")
HEADERS = {
    "ndcg@10": "nDCG@10",
    "mrr@10": "MRR@10",
    "precision@3": "P@3",
    "recall@50": "R@50",
    "recall@100": "R@100",
}

FORMAT = "hybrid-rag-suite/2"
PER_QUERY_KEPT = ("ndcg@10",)  # what RESULTS.md cites query by query (paired tests); the rest as means


def compact(suite: dict[str, Any]) -> dict[str, Any]:
    """A written suite: ids once per dataset, per-query arrays only for ``PER_QUERY_KEPT`` (every
    metric's mean is kept), the trace notes and the settings once: the committed file stays small."""
    out = copy.deepcopy(suite)
    ids: dict[str, list[str]] = {}
    settings = None
    notes = set(out.get("notes", []))
    for r in out["results"]:
        notes.update(r["notes"])  # the tables cite their union: kept once, not once a result
        r["notes"] = []
        per_query = r["per_query"]
        if isinstance(next(iter(per_query.values()), []), dict):  # /1: a dict a metric
            order = ids.setdefault(r["dataset"], sorted(next(iter(per_query.values()))))
            r["per_query"] = {m: [values[q] for q in order] for m, values in per_query.items()}
        r["per_query"] = {m: values for m, values in r["per_query"].items() if m in PER_QUERY_KEPT}
        settings = settings or r.pop("settings", None)
        r.pop("settings", None)
    out["format"] = FORMAT
    out["notes"] = sorted(notes)
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


def report_of(record: Mapping[str, Any]) -> EvalReport:
    """The EvalReport behind a suite result (its per-query values), for paired tests."""
    per_query = {m: dict(v) for m, v in record["per_query"].items()}
    metrics = tuple(m for m in METRICS if m in per_query) or tuple(per_query)
    return EvalReport(metrics, {m: float(record["metrics"][m]) for m in metrics}, per_query)


def paired(a: Mapping[str, Any], b: Mapping[str, Any], test: str = "student") -> dict[str, Comparison]:
    return compare(report_of(a), report_of(b), test=test)  # type: ignore[arg-type]


def ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def quality_section(suite: Mapping[str, Any]) -> list[str]:
    p = suite["protocol"]
    baseline = suite.get("baseline", "default")
    lines = [
        f"Embedder `{p['embedder']}`, torch threads {p.get('torch_threads', 'default')}; "
        f"{p['warmup_queries']} warm-up queries a configuration, {p['repeats']} timed pass over every "
        "judged query; "
        f"top {p['top_k']} chunks a query, scored per document (a document at its best chunk). "
        f"Δ and p: paired two-sided t-test over the queries against `{baseline}` (ranx); * p < 0.05.",
        "",
        "| configuration | what | "
        + " | ".join(HEADERS[m] for m in METRICS)
        + " | Δ nDCG@10 | p | ms p50 | ms p95 |",
        "|---|---|" + "---:|" * (len(METRICS) + 4),
    ]
    for info in suite["datasets"]:
        rows = [r for r in suite["results"] if r["dataset"] == info["name"]]
        base = next((r for r in rows if r["config"] == baseline), None)
        ingest = next(iter(info["ingest"].values()), {})
        lines.append(
            f"| **{info['name']}** | {info['docs']} docs, {rows[0]['chunks'] if rows else '?'} chunks, "
            f"{info['queries']} queries; ingest {ingest.get('seconds', 0):.0f} s"
            f"{'' if ingest.get('fresh') else ' (kept store)'} |" + " |" * (len(METRICS) + 4)
        )
        for r in rows:
            cells = [f"{r['metrics'][m]:.3f}" for m in METRICS]
            delta = p_value = "–"
            if base is not None and r is not base:
                c = paired(base, r)["ndcg@10"]
                delta, p_value = f"{c.delta:+.3f}", f"{c.p_value:.3f}{' *' if c.significant else ''}"
            wall = r["latency_ms"].get("wall", r["latency_ms"]["total"])
            lines.append(
                f"| {r['config']} | {r['mode']}: {r['description']} | "
                + " | ".join(cells)
                + f" | {delta} | {p_value} | "
                f"{ms(wall['p50'])} | {ms(wall['p95'])} |"
            )
    same = [
        f"{r['dataset']}/{r['config']}"
        for r in suite["results"]
        for base in [
            next(
                (b for b in suite["results"] if b["dataset"] == r["dataset"] and b["config"] == baseline),
                None,
            )
        ]
        if base is not None
        and r is not base
        and r["per_query"].get("ndcg@10") == base["per_query"].get("ndcg@10")
    ]
    if same:
        lines += [
            "",
            f"Same nDCG@10 as `{baseline}` on every single query (the switch moved no query's score): "
            + ", ".join(f"`{x}`" for x in same)
            + ".",
        ]
    notes = summarize_notes({n for r in suite["results"] for n in r["notes"]} | set(suite.get("notes", [])))
    if notes:
        lines += ["", "Notes from the query traces: " + "; ".join(notes) + "."]
    return lines


def summarize_notes(notes: set[str], limit: int = 3) -> list[str]:
    """Trace notes for a table footer: notes that share a prefix (``"expanded with: ..."``, one a
    query) are counted under it when there are more than ``limit`` of them."""
    groups: dict[str, list[str]] = {}
    for note in sorted(notes):
        groups.setdefault(note.split(":", 1)[0] if ":" in note else note, []).append(note)
    out = []
    for prefix, members in groups.items():
        if len(members) > limit:
            out.append(f"`{prefix}: …` ({len(members)} distinct, e.g. `{members[0]}`)")
        else:
            out.extend(f"`{m}`" for m in members)
    return out


def stage_section(suite: Mapping[str, Any]) -> list[str]:
    stages = [
        "embed_query",
        "dense",
        "bm25",
        "expansion",
        "fetch",
        "exact_scores",
        "fuse",
        "rerank",
        "mmr",
        "total",
        "wall",
    ]
    lines = [
        "",
        "Where a query's time goes, per configuration (ms per stage, p50 / p95; `total` = the trace, "
        "`wall` = around `Engine.query`):",
        "",
        "| dataset | configuration | " + " | ".join(stages) + " |",
        "|---|---|" + "---:|" * len(stages),
    ]
    for r in suite["results"]:
        lat = r["latency_ms"]
        cells = [f"{ms(lat[s]['p50'])} / {ms(lat[s]['p95'])}" if s in lat else "" for s in stages]
        lines.append(f"| {r['dataset']} | {r['config']} | " + " | ".join(cells) + " |")
    return lines
