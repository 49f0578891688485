"""A flag's worth, question by question: each arm against a base configuration, paired per query.

Two inputs, each with per-query figures:

* ``code``: a ``code_questions`` run's ``*.per_query.json`` (``--out X.json`` writes it beside X):
  file NDCG@10 and chunk MRR@10 per question, grouped as the study groups them (all, kind,
  language, language and kind); the questions' kinds and languages are read from
  ``benchmarks/judged/code``.
* ``eval``: ``hybrid-rag eval --per-query --json`` outputs, one file a setting (``off.json``
  ``on.json``), every mode in them.
* ``languages``: two ``languages`` runs with ``--per-query`` (their JSON, or the ``partial-*.json``
  a run leaves in its ``--work``): each set both measured, each config (``dense``, ``default``),
  and every set's questions pooled (RESULTS.md#e5-4-bit).

For each group: the arm's mean, the paired mean difference with its 95% interval (Student's t
over the questions), and how many questions moved up and down. Used by RESULTS.md#hubness:

    .venv/bin/python benchmarks/studies/_paired_flags.py code /tmp/cq.per_query.json \\
        --base default --arm hubness --arm dense-hubness:dense
    .venv/bin/python benchmarks/studies/_paired_flags.py eval off.json on.json
    .venv/bin/python benchmarks/studies/_paired_flags.py languages fp32.json int8-mixed.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies._code_questions_data import load_specs
from studies._code_questions_metrics import mean, paired


def moved(a: Mapping[str, float], b: Mapping[str, float], qids: Sequence[str]) -> tuple[int, int]:
    """Questions where ``a`` is above / below ``b`` (beyond rounding)."""
    up = sum(1 for q in qids if a[q] > b[q] + 1e-6)
    down = sum(1 for q in qids if a[q] < b[q] - 1e-6)
    return up, down


def row(name: str, arm: Mapping[str, float], base: Mapping[str, float], qids: Sequence[str]) -> str:
    d = paired(arm, base, qids)
    up, down = moved(arm, base, qids)
    return (
        f"| {name} | {len(qids)} | {mean(base[q] for q in qids):.3f} | {mean(arm[q] for q in qids):.3f} | "
        f"{d['diff']:+.3f} ± {d['ci95']:.3f} | {up} / {down} |"
    )


HEADER = "| group | n | base | arm | arm − base (95%) | questions up / down |\n|---|---:|---:|---:|---:|---:|"


def code(args: argparse.Namespace) -> None:
    data = json.loads(Path(args.per_query).read_text())
    per = data["per"]
    questions = {q.qid: q for s in load_specs() for q in s.questions if q.qid in data["questions"]}
    groups: dict[str, list[str]] = {}
    for q in questions.values():
        for g in ("all", f"kind:{q.kind}", f"lang:{q.language}"):
            groups.setdefault(g, []).append(q.qid)
    for spec in args.arm:
        arm, _, base = spec.partition(":")
        base = base or args.base
        for metric in args.metrics:
            print(f"\n**{arm} against {base}, {metric}**\n\n{HEADER}")
            for g in sorted(groups, key=lambda g: (g != "all", g.split(":")[0] != "kind", g)):
                print(row(g, per[arm][metric], per[base][metric], groups[g]))


def evaluate(args: argparse.Namespace) -> None:
    off = {r["mode"]: r for r in json.loads(Path(args.off).read_text())}
    on = {r["mode"]: r for r in json.loads(Path(args.on).read_text())}
    print(HEADER.replace("group", "mode, metric"))
    for mode in off:
        for metric in args.eval_metrics:
            a, b = on[mode]["per_query"][metric], off[mode]["per_query"][metric]
            print(row(f"{off[mode]['dataset']} {mode} {metric}", a, b, sorted(b)))


def languages(args: argparse.Namespace) -> None:
    sets = [json.loads(Path(f).read_text())["sets"] for f in (args.off, args.on)]
    both = [name for name in sets[0] if "per_query" in sets[1].get(name, {}).get(args.model, {})]
    print(HEADER.replace("group", "set, config, metric"))
    for config in args.configs:
        for metric in args.eval_metrics:
            pooled: list[dict[str, float]] = [{}, {}]
            for name in both:
                b, a = (s[name][args.model]["per_query"][config][metric] for s in sets)
                print(row(f"{name} {config} {metric}", a, b, sorted(b)))
                for got, per in zip(pooled, (b, a), strict=True):
                    got.update({f"{name}/{q}": v for q, v in per.items()})
            print(row(f"**all {len(both)} sets** {config} {metric}", pooled[1], pooled[0], sorted(pooled[0])))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("code")
    c.add_argument("per_query")
    c.add_argument("--base", default="default")
    c.add_argument("--arm", action="append", default=[], help="ARM or ARM:BASE")
    c.add_argument("--metrics", nargs="*", default=["ndcg", "mrr"])
    e = sub.add_parser("eval")
    e.add_argument("off")
    e.add_argument("on")
    e.add_argument("--eval-metrics", nargs="*", default=["ndcg@10", "mrr@10"])
    g = sub.add_parser("languages")
    g.add_argument("off")
    g.add_argument("on")
    g.add_argument("--model", default="e5")
    g.add_argument("--configs", nargs="*", default=["dense", "default"])
    g.add_argument("--eval-metrics", nargs="*", default=["mrr@10", "ndcg@10"])
    args = p.parse_args()
    {"code": code, "eval": evaluate, "languages": languages}[args.what](args)


if __name__ == "__main__":
    main()
