"""Markdown for ``repo_search_languages``: per language, per project and per kind of question, each
configuration a column, the old code's default beside it when the result carries a ``before``."""

from __future__ import annotations

from typing import Any

LANGUAGES = ("python", "rust", "go", "java", "javascript", "typescript", "cpp", "c")
SINGLE = ("bm25", "dense")


def _cell(summary: dict[str, Any], group: str, metric: str) -> str:
    value = summary.get(group, {}).get(metric)
    return "–" if value is None or value != value else f"{value:.3f}"


def _table(result: dict[str, Any], groups: list[tuple[str, str]], metric: str, head: str) -> list[str]:
    rows = result["rows"]
    before = {r["config"]: r["summary"] for r in result.get("before", {}).get("rows", [])}
    cols = [(r["config"], r["summary"]) for r in rows]
    cols += [(f"{name} (old)", summary) for name, summary in before.items()]
    lines = [
        f"| {head} | n | " + " | ".join(name for name, _ in cols) + " |",
        "|---|---:|" + "---:|" * len(cols),
    ]
    for label, group in groups:
        counts = [str(s[group]["n"]) for s in (rows[0]["summary"], *before.values()) if group in s]
        if counts:  # n of this run / of the old code's where they differ
            n = (
                " / ".join(dict.fromkeys(counts[:1] + counts[-1:]))
                if group in rows[0]["summary"]
                else f"– / {counts[0]}"
            )
            lines.append(f"| {label} | {n} | " + " | ".join(_cell(s, group, metric) for _, s in cols) + " |")
    return lines


def targets(result: dict[str, Any]) -> list[str]:
    """The issue's targets, each met or not, from the summaries."""
    by = {r["config"]: r["summary"] for r in result["rows"]}
    d = by.get("default")
    if d is None:
        return []
    out = []
    py, other = d.get("doc|python", {}).get("mrr@10"), d.get("doc|other", {}).get("mrr@10")
    if py is not None and other is not None:
        met = "met" if other >= py - 0.05 else "not met"
        out.append(f"non-Python doc MRR@10 {other:.3f} against Python's {py:.3f} (within 0.05: {met})")
    names = [p["name"] for p in result["projects"]]
    below = []
    for name in names:
        g = f"doc|{name}"
        single = [by[c][g]["mrr@10"] for c in SINGLE if c in by and g in by[c]]
        if g in d and single and d[g]["mrr@10"] < max(single):
            below.append(f"{name} {d[g]['mrr@10']:.3f} < {max(single):.3f}")
    if any(c in by for c in SINGLE):
        out.append(
            "default below its best single stage (doc MRR@10): " + ("; ".join(below) or "on no project")
        )
    if "identifier" in d:
        s1 = d["identifier"]["success@1"]
        out.append(f"identifier success@1 {s1:.3f} (>= 0.90: {'met' if s1 >= 0.9 else 'not met'})")
    return out


def render_languages(result: dict[str, Any]) -> str:
    projects = "; ".join(
        f"{p['name']} {p['project'].split('==')[1]} ({p['language']}, {p['source']}"
        f"{', ' + p['subdir'] if p.get('subdir') else ''}; "
        f"{next(iter(p['ingest'].values()))['corpus']['chunks']}"
        f" chunks; {p['scored']['doc']} doc / {p['scored']['identifier']} identifier"
        f"{' / ' + str(p['scored']['judged']) + ' judged' if p['scored'].get('judged') else ''} questions)"
        for p in result["projects"]
    )
    summary = dict(result["rows"][0]["summary"])
    for r in result.get("before", {}).get("rows", []):  # projects measured on the old code only
        summary = r["summary"] | summary
    langs = [(lang, f"doc|lang:{lang}") for lang in LANGUAGES if f"doc|lang:{lang}" in summary]
    names = [p["name"] for p in result["projects"]]
    names += [n for n in result.get("before", {}).get("names", []) if n not in names]
    lines = [
        f"Projects: {projects}. Top {result['protocol']['top_k']}, embedder "
        f"`{result['protocol']['embedder']}` (bge-small: its own stores).",
        "",
        "**Doc-comment questions by language, MRR@10:**",
        "",
        *_table(
            result,
            [*langs, ("all Python", "doc|python"), ("all other languages", "doc|other"), ("all", "doc")],
            "mrr@10",
            "language",
        ),
        "",
        "**Doc-comment questions by project, MRR@10:**",
        "",
        *_table(result, [(n, f"doc|{n}") for n in names], "mrr@10", "project"),
        "",
        "**Identifier questions by project, success@1:**",
        "",
        *_table(
            result, [*((n, f"identifier|{n}") for n in names), ("all", "identifier")], "success@1", "project"
        ),
    ]
    if "judged" in summary:
        judged = [(n, f"judged|{n}") for n in names if f"judged|{n}" in summary] + [("all", "judged")]
        lines += [
            "",
            "**Judged natural questions, MRR@10:**",
            "",
            *_table(result, judged, "mrr@10", "project"),
        ]
    lines += ["", "**Every kind, success@1 / success@10:**", ""]
    kinds = [("doc", "doc"), ("identifier", "identifier"), ("judged", "judged")]
    lines += _table(result, kinds, "success@1", "success@1")
    lines += ["", *_table(result, kinds, "success@10", "success@10")]
    met = targets(result)
    if met:
        lines += ["", "Targets: " + "; ".join(met) + "."]
    if "before" in result:
        lines += ["", "(old): " + _runs(result["before"].get("runs", []))]
    if result.get("runs"):
        lines += ["", "Runs: " + _runs(result["runs"])]
    return "\n".join(lines)


def _runs(runs: list[dict[str, Any]]) -> str:
    """Where each merged run's figures come from: commit, date, time, load."""
    return (
        "; ".join(
            f"{', '.join(r['projects'])} at {r['commit'][:7]}{' (dirty)' if r.get('dirty') else ''}"
            f" on {r.get('date') or '?'}, {r.get('seconds') or 0:,.0f} s, load average"
            f" {' before, '.join(str(x) for x in r.get('load', ['?', '?']))} after"
            for r in runs
        )
        + "."
    )
