"""What is not one study's: the plots and the comparison of two suite runs.

Every study renders its own tables into RESULTS.md (``harness.py report``); this script draws the
PNG plots from the committed JSON (one quality chart a dataset from the suite; the scale study draws
its own latency plot) and compares two runs of the suite query by query.

    .venv/bin/python benchmarks/report.py --plots                              # benchmarks/plots/*.png
    .venv/bin/python benchmarks/report.py --compare A.json B.json              # paired t-test, per config
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (str(ROOT), str(ROOT / "benchmarks")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from studies._suite_tables import HEADERS, expand, paired  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PLOTS = ROOT / "benchmarks" / "plots"


# -- plots -----------------------------------------------------------------------------------------


def plot_quality(suite: Mapping[str, Any], directory: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    paths = []
    shown = ("ndcg@10", "mrr@10", "precision@3", "recall@100")
    for info in suite["datasets"]:
        rows = [r for r in suite["results"] if r["dataset"] == info["name"]]
        fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(rows)), 4.5))
        width = 0.8 / len(shown)
        x = np.arange(len(rows))
        for j, metric in enumerate(shown):
            ax.bar(
                x + (j - (len(shown) - 1) / 2) * width,
                [r["metrics"][metric] for r in rows],
                width,
                label=HEADERS[metric],
            )
        ax.set_xticks(x, [r["config"] for r in rows], rotation=30, ha="right")
        ax.set_ylim(0, 1.15)  # room for the legend above the bars
        ax.set_ylabel("score")
        ax.set_title(f"{info['name']}: {info['queries']} judged queries, {info['docs']} docs")
        ax.legend(fontsize=8, ncol=len(shown), loc="upper center")
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        path = directory / f"quality_{info['name']}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


# -- compare ---------------------------------------------------------------------------------------


def when(result: Mapping[str, Any]) -> str:
    """Date and commit of a run, from the harness's environment or an older file's own fields."""
    env = result.get("environment") or {}
    date = env.get("date") or result.get("created_at")
    commit = (env.get("git") or result.get("git") or {}).get("commit") or "?"
    return f"{date} commit {commit[:10]}"


def compare_suites(a: Mapping[str, Any], b: Mapping[str, Any], test: str = "student") -> str:
    """Markdown: per dataset and configuration in both runs, each metric's means, Δ and paired p."""
    rows_a = {(r["dataset"], r["config"]): r for r in a["results"]}
    rows_b = {(r["dataset"], r["config"]): r for r in b["results"]}
    data_a = {d["name"]: d.get("sha256") for d in a["datasets"]}
    data_b = {d["name"]: d.get("sha256") for d in b["datasets"]}
    lines = [
        f"A: {when(a)}; B: {when(b)}; paired {test} test, * p < 0.05",
        "",
        "| dataset | configuration | metric | A | B | Δ (B − A) | p |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    warnings = []
    for key in [k for k in rows_a if k in rows_b]:
        dataset, config = key
        if data_a.get(dataset) != data_b.get(dataset):
            warnings.append(f"{dataset}: the data files differ between the runs")
        try:
            comparisons = paired(rows_a[key], rows_b[key], test)
        except ValueError as exc:
            warnings.append(f"{dataset}/{config}: {exc}")
            continue
        for metric, c in comparisons.items():
            lines.append(
                f"| {dataset} | {config} | {HEADERS.get(metric, metric)} | {c.mean_a:.4f} | {c.mean_b:.4f} | "
                f"{c.delta:+.4f} | {c.p_value:.4f}{' *' if c.significant else ''} |"
            )
    only = sorted(set(rows_a) ^ set(rows_b))
    if only:
        warnings.append("in one run only: " + ", ".join(f"{d}/{c}" for d, c in only))
    return "\n".join(lines + [""] + [f"warning: {w}" for w in sorted(set(warnings))])


def read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plots", action="store_true", help="draw benchmarks/plots/*.png from the results")
    p.add_argument("--results", default=str(RESULTS), help="folder of the suite JSON (%(default)s)")
    p.add_argument("--out", default=str(PLOTS), help="folder for the PNG plots (%(default)s)")
    p.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"), help="paired test of two suite runs")
    p.add_argument("--test", choices=["student", "fisher"], default="student")
    args = p.parse_args(argv)
    if args.compare:
        a, b = (expand(json.loads(Path(x).read_text(encoding="utf-8"))) for x in args.compare)
        print(compare_suites(a, b, args.test))
        return 0
    if not args.plots:
        p.error("nothing to do: --plots or --compare A.json B.json (tables: harness.py report)")
    directory = Path(args.out)
    directory.mkdir(parents=True, exist_ok=True)
    drawn: list[Path] = []
    suite = read(Path(args.results) / "suite.json")  # latency_vs_size.png: the scale study draws it
    if suite is not None:
        drawn += plot_quality(expand(suite), directory)
    if not drawn:
        print(f"report.py: no suite.json in {args.results}", file=sys.stderr)
        return 2
    print("drew " + ", ".join(str(d) for d in drawn))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
