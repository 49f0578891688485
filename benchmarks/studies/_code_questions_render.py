"""Markdown for ``code_questions``: the projects, then file-level NDCG@10 and chunk-level MRR@10 per
language, kind and project (each configuration a column), the default against its best stage
(paired 95% intervals) and the issue's targets, from the result JSON alone."""

from __future__ import annotations

from typing import Any

KINDS = ("symbol", "behaviour", "architecture")
TARGETS = {"all": 0.88, "lang": 0.85, "kind:symbol": 0.95}


def _f(value: Any) -> str:
    return "–" if value is None or value != value else f"{value:.3f}"


def _groups(result: dict[str, Any], prefix: str) -> list[str]:
    first = next(iter(result["summary"].values()))
    return sorted(g for g in first if g.startswith(prefix) and "|" not in g)


def _table(
    result: dict[str, Any], head: str, groups: list[str], label=lambda g: g.split(":", 1)[-1]
) -> list[str]:
    names = list(result["summary"])
    vs = result.get("versus_best_stage", {}).get("ndcg", {})
    lines = [
        f"| {head} | n | "
        + " | ".join(f"{n} NDCG / MRR" for n in names)
        + " | default − best stage (NDCG, 95%) |",
        "|---|---:|" + "---:|" * (len(names) + 1),
    ]
    for g in groups:
        cells = [
            f"{_f(result['summary'][n][g]['ndcg'])} / {_f(result['summary'][n][g]['mrr'])}" for n in names
        ]
        v = vs.get(g)
        diff = f"{v['diff']:+.3f} ± {_f(v['ci95'])} ({v['stage']})" if v else "–"
        n = result["summary"][names[0]][g]["n"]
        lines.append(f"| {label(g)} | {n} | " + " | ".join(cells) + f" | {diff} |")
    return lines


def _cross(result: dict[str, Any]) -> list[str]:
    """Languages by kinds: each cell the file NDCG@10 of every configuration, in column order."""
    names = list(result["summary"])
    first = result["summary"][names[0]]
    kinds = [k for k in KINDS if f"kind:{k}" in first]
    lines = [
        "| language | " + " | ".join(f"{k} ({' / '.join(names)})" for k in kinds) + " |",
        "|---|" + "---:|" * len(kinds),
    ]
    for g in _groups(result, "lang:"):
        cells = []
        for k in kinds:
            key = f"{g}|kind:{k}"
            if key not in first:
                cells.append("–")
                continue
            cells.append(
                " / ".join(_f(result["summary"][n][key]["ndcg"]) for n in names) + f" ({first[key]['n']})"
            )
        lines.append(f"| {g[5:]} | " + " | ".join(cells) + " |")
    return lines


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def targets(result: dict[str, Any]) -> list[str]:
    d = result["summary"].get("default")
    if not d:
        return []
    vs = result.get("versus_best_stage", {}).get("ndcg", {})
    out = [f"overall {_f(d['all']['ndcg'])} (≥ {TARGETS['all']}: {_met(d['all']['ndcg'] >= TARGETS['all'])})"]
    low = [f"{g[5:]} {_f(d[g]['ndcg'])}" for g in _groups(result, "lang:") if d[g]["ndcg"] < TARGETS["lang"]]
    out.append(
        f"every language ≥ {TARGETS['lang']}: " + ("met" if not low else "not met (" + ", ".join(low) + ")")
    )
    if "kind:symbol" in d:
        s = d["kind:symbol"]["ndcg"]
        out.append(
            f"symbol questions {_f(s)} (≥ {TARGETS['kind:symbol']}: {_met(s >= TARGETS['kind:symbol'])})"
        )
    below = [
        g for g in _groups(result, "lang:") + _groups(result, "kind:") if vs.get(g, {}).get("diff", 0) <= 0
    ]
    if vs:
        out.append(
            "default at or above its best stage in every language and kind: "
            + ("met" if not below else "not met (" + ", ".join(below) + ")")
        )
    return out


def render_result(result: dict[str, Any]) -> str:
    from harness import environment_line

    p = result["protocol"]
    lines = [
        environment_line(result),
        "",
        f"Embedder `{p['embedder']}`; top {p['top_k']} chunks a question "
        f"({p['top_files']} for the file ranking); file-level NDCG@10 "
        "(binary, ideal = min(#answer files, 10)) "
        "and chunk-level MRR@10 (a chunk citing an answer's file and overlapping its lines). "
        "Configurations: " + "; ".join(f"`{c['name']}` {c['description']}" for c in result["configs"]) + ".",
        "",
        "| project | language | package | folder | files | chunks "
        "| symbol / behaviour / architecture | query ms p50 (loaded) |",
        "|---|---|---|---|---:|---:|---|---|",
    ]
    for pr in result["projects"]:
        q = pr["questions"]
        ms = ", ".join(f"{k} {v}" for k, v in pr["ms_p50"].items())
        lines.append(
            f"| {pr['project']} | {pr['language']} | `{pr['package']}` | `{pr['folder'] or '.'}` "
            f"| {pr['files']} | "
            f"{pr['chunks']} | {' / '.join(str(q.get(k, 0)) for k in KINDS)} | {ms} |"
        )
    lines += ["", "**Overall and per kind of question**", ""]
    first = next(iter(result["summary"].values()))
    lines += _table(result, "group", ["all"] + [f"kind:{k}" for k in KINDS if f"kind:{k}" in first])
    lines += ["", "**Per language**", ""]
    lines += _table(result, "language", _groups(result, "lang:"))
    lines += ["", "**File-level NDCG@10 per language and kind** (n in brackets)", ""]
    lines += _cross(result)
    lines += ["", "**Per project**", ""]
    lines += _table(result, "project", _groups(result, "project:"))
    found = targets(result)
    if found:
        lines += ["", "Targets (issue 37, default): " + "; ".join(found) + "."]
    return "\n".join(lines)
