"""Turn the benchmark JSON into markdown tables (in benchmarks/RESULTS.md) and PNG plots.

The tables go between ``<!-- suite:begin -->`` and ``<!-- suite:end -->`` in RESULTS.md, so the
other sections of that file (written by others) stay as they are; the file and the markers are
created when absent. Plots: latency against corpus size per stage, and one quality chart a dataset.

    .venv/bin/python benchmarks/report.py                       # results/*.json -> RESULTS.md, plots/
    .venv/bin/python benchmarks/report.py --compare A.json B.json   # paired t-test, per config
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from suite_format import expand  # noqa: E402

from hybrid_rag.evaluation.metrics import Comparison, EvalReport, compare  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DOCUMENT = ROOT / "benchmarks" / "RESULTS.md"
PLOTS = ROOT / "benchmarks" / "plots"
BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"
METRICS = ("ndcg@10", "mrr@10", "precision@3", "recall@50", "recall@100")
HEADERS = {
    "ndcg@10": "nDCG@10",
    "mrr@10": "MRR@10",
    "precision@3": "P@3",
    "recall@50": "R@50",
    "recall@100": "R@100",
}


# -- pure helpers ----------------------------------------------------------------------------------


def replace_section(document: str, section: str) -> str:
    """``document`` with the text between the markers replaced by ``section``; the markers and the
    section are appended when absent. Everything outside the markers is kept byte for byte."""
    block = f"{BEGIN}\n{section.strip()}\n{END}"
    start, end = document.find(BEGIN), document.find(END)
    if start == -1 or end == -1 or end < start:
        if BEGIN in document or END in document:
            raise ValueError(f"{DOCUMENT.name}: unbalanced {BEGIN} / {END} markers; fix them by hand")
        return document.rstrip("\n") + ("\n\n" if document.strip() else "") + block + "\n"
    return document[:start] + block + document[end + len(END) :]


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


def size_label(n: int) -> str:
    return (
        f"{n // 1_000_000}M"
        if n >= 1_000_000 and n % 1_000_000 == 0
        else f"{n // 1000}k"
        if n >= 1000
        else str(n)
    )


def gib(n: float | None) -> str:
    return "–" if n is None else f"{n / 2**30:.2f} GiB"


def machine_line(result: Mapping[str, Any]) -> str:
    m, git = result["machine"], result.get("git", {})
    ram = m.get("ram_bytes")
    load = m.get("load_average", [])
    end = result.get("load_average_end", [])
    quiet = "quiet" if load and load[0] < 0.5 * (m.get("cores") or 1) else "**busy** (timings are inflated)"
    commit = (git.get("commit") or "?")[:10] + (" (uncommitted changes)" if git.get("dirty") else "")
    return (
        f"{m.get('cores')} cores ({m.get('cpu_model')}), {gib(ram)} RAM, Python {m.get('python')}; "
        f"load average {'/'.join(f'{x:.1f}' for x in load)} at start, "
        f"{'/'.join(f'{x:.1f}' for x in end)} at end: {quiet}; commit {commit}; {result.get('created_at')}; "
        f"run took {result.get('wall_seconds', 0) / 60:.0f} min"
    )


# -- sections --------------------------------------------------------------------------------------


def quality_section(suite: Mapping[str, Any]) -> list[str]:
    p = suite["protocol"]
    baseline = suite.get("baseline", "default")
    lines = [
        "### Quality: every configuration on every judged dataset (`results/suite.json`)",
        "",
        f"Machine: {machine_line(suite)}.",
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


def scale_section(scale: Mapping[str, Any]) -> list[str]:
    p = scale["protocol"]
    sizes = [s for s in scale["sizes"] if "error" not in s]
    lines = [
        "",
        "### Speed and scale: synthetic corpora of 1k-1M chunks (`results/scale.json`)",
        "",
        f"Machine: {machine_line(scale)}.",
        f"{p['queries']} timed queries a size after {p['warmup']} warm-up, one pass; searches on one OpenMP "
        f"thread as the engine runs them; torch threads {p.get('torch_threads', 'default')}. Chunks of "
        "500-800 "
        f"cl100k tokens from a Zipfian vocabulary; random unit vectors (dimension {p['dimension']}), "
        f"{scale.get('windows_source', '')} for the MaxP windows a chunk. Latency in ms, p50 / p95:",
        "",
        "| chunks | embed query | BM25 | dense MaxP (default) | dense pooled | raw flat scan, MaxP | "
        "raw scan GB/s | fetch | pipeline end to end | peak RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    estimated = scale.get("extrapolated", {}).get("pipeline_p50_ms", {})
    for s in sizes:
        lat = s["latency_ms"]

        def pair(name: str, lat: Mapping[str, Any] = lat) -> str:
            return f"{ms(lat[name]['p50'])} / {ms(lat[name]['p95'])}" if name in lat else "–"

        e2e = pair("pipeline_e2e")
        if e2e == "–" and str(s["chunks"]) in estimated:
            e2e = f"≈ {ms(estimated[str(s['chunks'])])} (estimate)"
        lines.append(
            f"| {size_label(s['chunks'])} | {pair('embed_query')} | {pair('bm25_search')} | "
            f"{pair('dense_maxp_search')} | {pair('dense_pooled_search')} | {pair('faiss_flat_maxp_raw')} | "
            f"{s['scan']['maxp']['gb_per_s_raw_p50']:.1f} | {pair('pipeline.fetch')} | {e2e} | "
            f"{gib(s['memory_bytes']['peak'])} |"
        )
    lines += [
        "",
        "Build and footprint (bytes on disk per chunk; build seconds exclude generating the synthetic data):",
        "",
        "| chunks | MaxP windows | BM25 build | dense add | store write | disk: dense | disk: BM25 | "
        "disk: store |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in sizes:
        sec, disk = s["seconds"], s.get("bytes_per_chunk", {})
        how = "" if s.get("bm25_build_path", "").startswith("text") else " (direct)"
        store_s = f"{sec['store_write']:.1f} s" if "store_write" in sec else "–"
        store_b = f"{disk['store']:,.0f}" if disk.get("store") else "–"
        lines.append(
            f"| {size_label(s['chunks'])} | {s['windows']['total']:,} | {sec['bm25_build']:.1f} s{how} | "
            f"{sec['dense_maxp_add']:.1f} s | {store_s} | {disk.get('dense_maxp', 0):,.0f} | "
            f"{disk.get('bm25', 0):,.0f} | {store_b} |"
        )
    lines += ingest_lines(scale) + scale_reading(scale)
    return lines


def ingest_lines(scale: Mapping[str, Any]) -> list[str]:
    ing = scale.get("ingest") or {}
    if "ingest" not in ing:
        return []
    i = ing["ingest"]
    rates = i["chunks_per_s"]
    lines = [
        "",
        f"Ingest throughput, the real `Ingestor` and model (`{i['model']}`) on a sample of "
        f"{i['chunks']} chunks "
        f"({ing['chunk_tokens']['mean']:.0f} tokens a chunk, {ing['windows_per_chunk']['mean']:.2f} "
        "MaxP windows "
        f"a chunk), torch threads {ing.get('torch_threads', {}).get('used', '?')}:",
        "",
        "| stage | seconds | chunks/s |",
        "|---|---:|---:|",
    ]
    for stage, seconds in i["seconds"].items():
        lines.append(f"| {stage} | {seconds:.2f} | {rates.get(stage, 0):,.1f} |")
    c = ing["chunking_only"]
    lines.append(f"| chunking alone, {c['chunks']} chunks | {c['seconds']:.2f} | {c['chunks_per_s']:,.1f} |")
    build = i.get("index_build_seconds", {})
    if build:
        lines += [
            "",
            "Index build inside that ingest: " + ", ".join(f"{k} {v:.2f} s" for k, v in build.items()) + ".",
        ]
    return lines


def scale_reading(scale: Mapping[str, Any]) -> list[str]:
    sizes = [s for s in scale["sizes"] if "error" not in s]
    if not sizes:
        return []
    big = max(sizes, key=lambda s: s["chunks"])
    lat = big["latency_ms"]
    ext = scale.get("extrapolated", {})
    scan = big["scan"]
    lines = [
        "",
        "Reading these figures:",
        "",
        f"* **The floor.** An exact search reads every vector: at {size_label(big['chunks'])} chunks that is "
        f"{scan['pooled']['bytes_per_query'] / 1e9:.2f} GB a query for pooled vectors and "
        f"{scan['maxp']['bytes_per_query'] / 1e9:.2f} GB for the default MaxP windows; the raw Faiss "
        "flat scan "
        f"ran at {scan['maxp']['gb_per_s_raw_p50']:.1f} GB/s (MaxP) on one thread, "
        f"{ms(lat['faiss_flat_maxp_raw']['p50'])} ms. Query embedding is "
        f"{ms(lat['embed_query']['p50'])} ms (torch {big.get('torch_threads', {}).get('used', '?')} "
        "thread(s)) "
        f"and {ms(lat.get('embed_query_torch_default_threads', {}).get('p50'))} ms with torch's default "
        "threads.",
        f"* **Our overhead over the raw index** at {size_label(big['chunks'])}: MaxP search "
        f"{ms(lat['dense_maxp_search']['p50'])} ms vs the raw scan "
        f"{ms(lat['faiss_flat_maxp_raw']['p50'])} ms; "
        f"pooled {ms(lat['dense_pooled_search']['p50'])} ms vs {ms(lat['faiss_flat_pooled_raw']['p50'])} ms.",
    ]
    if ext.get("bm25_text_build_seconds"):
        est = ", ".join(
            f"{size_label(int(k))}: ≈ {v / 60:.0f} min" for k, v in ext["bm25_text_build_seconds"].items()
        )
        lines.append(
            f"* **Extrapolated, not measured:** BM25 built from text ({ext['bm25_text_build_basis']}): "
            f"{est}. "
            "Above the text limit the bm25s matrix was built directly from the synthetic term ids "
            "(same scores: checked at 10k, see `direct_build_check`), so its build time is not the engine's."
        )
    if ext.get("pipeline_p50_ms"):
        lines.append(
            "* **Estimated end to end** where no store was built: "
            + ", ".join(f"{size_label(int(k))}: ≈ {ms(v)} ms p50" for k, v in ext["pipeline_p50_ms"].items())
            + f" ({ext['pipeline_basis']})."
        )
    if ext.get("full_ingest_hours"):
        lines.append(
            "* **A full ingest** at the sample's rates ("
            + ext["full_ingest_basis"]
            + "): "
            + ", ".join(f"{size_label(int(k))}: {v:,.1f} h" for k, v in ext["full_ingest_hours"].items())
            + ". Embedding dominates."
        )
    check = next((s["direct_build_check"] for s in sizes if "direct_build_check" in s), None)
    if check:
        lines.append(
            f"* Direct BM25 build vs the text build at 10k: the same top 10 for {check['same_top10']} of "
            f"{check['queries']} queries."
        )
    return lines


def peers_section(peers: Mapping[str, Any]) -> list[str]:
    p = peers["protocol"]
    lines = [
        "",
        "### Peers, same run, same chunks and vectors (`results/peers.json`)",
        "",
        f"Machine: {machine_line(peers)}.",
        f"Every system returns its top {p['depth']} a query; {p['warmup_queries']} warm-up queries, one "
        "timed pass. "
        "Ratio = the peer's p50 ÷ ours (above 1: the peer is slower); Δ = the peer's nDCG@10 minus ours. "
        "Dense rows time the search alone (the query vectors are shared).",
        "",
    ]
    blocks = [(d["name"], d) for d in peers["datasets"]]
    if peers.get("synthetic"):
        blocks.append(
            (f"synthetic {size_label(peers['synthetic']['chunks'])} (speed only)", peers["synthetic"])
        )
    for name, block in blocks:
        lines += [
            f"**{name}** ({block['chunks']} chunks, {block['queries']} queries)",
            "",
            "| system | what | nDCG@10 | Δ | p50 ms | p95 ms | ratio | build s |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for key, r in block["rows"].items():
            ndcg = f"{r['metrics']['ndcg@10']:.3f}" if "metrics" in r else "–"
            delta = f"{r['ndcg@10_delta']:+.3f}" if "ndcg@10_delta" in r else "–"
            ratio = (
                f"{r['latency_ratio_p50']:.2f}× vs {r['compared_to']}" if "latency_ratio_p50" in r else "–"
            )
            built = r.get("build_seconds")
            at_ingest = key.startswith("ours") and not built  # our indices were built by the ingest
            build = "at ingest" if at_ingest else "–" if built is None else f"{built:.2f}"
            lines.append(
                f"| {key} | {r['what']} | {ndcg} | {delta} | {ms(r['latency_ms']['p50'])} | "
                f"{ms(r['latency_ms']['p95'])} | {ratio} | {build} |"
            )
        lines.append("")
    return lines


def commands_section(found: Mapping[str, Mapping[str, Any]]) -> list[str]:
    took = {k: v.get("wall_seconds", 0) / 60 for k, v in found.items()}
    return [
        "### How to run",
        "",
        "```bash",
        "export HF_HUB_OFFLINE=1",
        "# quality: every dataset under ../shared/datasets x every configuration in benchmarks/configs.py",
        ".venv/bin/python benchmarks/run.py [--fresh] [--only cranfield] [--configs bm25 default] "
        "[--max-queries 50]",
        "# speed and scale: 1k, 10k, 100k, 1M chunks (one process a size) and the real-model ingest sample",
        ".venv/bin/python benchmarks/scale.py [--sizes 1000 10000] [--queries 100]",
        "# peers on the suite's stores and on a synthetic 10k corpus",
        ".venv/bin/python benchmarks/peers.py",
        "# this section and benchmarks/plots/*.png from benchmarks/results/*.json",
        ".venv/bin/python benchmarks/report.py",
        "# two runs of the suite, paired t-test per dataset, configuration and metric",
        ".venv/bin/python benchmarks/report.py --compare old_suite.json benchmarks/results/suite.json",
        "# the quick smoke bench (seconds): the configured embedder, or none at all",
        ".venv/bin/hybrid-rag bench",
        "HYBRID_RAG_EMBEDDING__MODEL=fake .venv/bin/hybrid-rag bench --json",
        "```",
        "",
        "How long the last runs took here: "
        + ", ".join(f"`{k}` {v:.0f} min" for k, v in took.items())
        + ". `run.py --fresh` re-ingests (and re-embeds) every dataset; without it the stores in "
        "`benchmarks/work/suite/` are re-used and only the queries run.",
    ]


def build_section(found: Mapping[str, Mapping[str, Any]]) -> str:
    lines = [
        "## Benchmark suite",
        "",
        "_Generated by `benchmarks/report.py` from `benchmarks/results/{suite,scale,peers}.json`; "
        "edit the scripts, not this section._",
        "",
        *commands_section(found),
    ]
    if "suite" in found:
        lines += ["", *quality_section(found["suite"]), *stage_section(found["suite"])]
    if "scale" in found:
        lines += scale_section(found["scale"])
    if "peers" in found:
        lines += peers_section(found["peers"])
    plots = [f"![{p.stem}](plots/{p.name})" for p in sorted(PLOTS.glob("*.png"))] if PLOTS.is_dir() else []
    if plots:
        lines += ["", "### Plots", "", *plots]
    return "\n".join(lines)


# -- plots -----------------------------------------------------------------------------------------

SCALE_SERIES = (
    ("embed_query", "embed query (model)"),
    ("bm25_search", "BM25 search"),
    ("dense_maxp_search", "dense MaxP search (default)"),
    ("dense_pooled_search", "dense pooled search"),
    ("faiss_flat_maxp_raw", "raw Faiss flat scan, MaxP"),
    ("pipeline.fetch", "fetch (SQLite)"),
    ("pipeline_e2e", "pipeline end to end"),
)


def plot_scale(scale: Mapping[str, Any], directory: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [s for s in scale["sizes"] if "error" not in s]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for key, label in SCALE_SERIES:
        points = [(s["chunks"], s["latency_ms"][key]) for s in sizes if key in s["latency_ms"]]
        if not points:
            continue
        x = [n for n, _ in points]
        p50 = [v["p50"] for _, v in points]
        p95 = [v["p95"] for _, v in points]
        (line,) = ax.plot(x, p50, marker="o", label=f"{label} (p50; band to p95)")
        ax.fill_between(x, p50, p95, color=line.get_color(), alpha=0.12)
    estimated = scale.get("extrapolated", {}).get("pipeline_p50_ms", {})
    if estimated:
        ax.plot(
            [int(k) for k in estimated],
            list(estimated.values()),
            "k*",
            markersize=11,
            label="end to end, estimated",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the index")
    ax.set_ylabel("ms per query")
    load = scale["machine"].get("load_average", [0])[0]
    ax.set_title(
        f"Latency per stage against corpus size ({scale['machine'].get('cores')} cores, load {load:.1f})"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path = directory / "latency_vs_size.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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


def compare_suites(a: Mapping[str, Any], b: Mapping[str, Any], test: str = "student") -> str:
    """Markdown: per dataset and configuration in both runs, each metric's means, Δ and paired p."""
    rows_a = {(r["dataset"], r["config"]): r for r in a["results"]}
    rows_b = {(r["dataset"], r["config"]): r for r in b["results"]}
    data_a = {d["name"]: d.get("sha256") for d in a["datasets"]}
    data_b = {d["name"]: d.get("sha256") for d in b["datasets"]}
    lines = [
        f"A: {a.get('created_at')} commit {(a.get('git', {}).get('commit') or '?')[:10]}; "
        f"B: {b.get('created_at')} commit {(b.get('git', {}).get('commit') or '?')[:10]}; "
        f"paired {test} test, * p < 0.05",
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


def load_results(directory: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for name in ("suite", "scale", "peers"):
        path = directory / f"{name}.json"
        if path.is_file():
            found[name] = json.loads(path.read_text(encoding="utf-8"))
    if "suite" in found:
        found["suite"] = expand(found["suite"])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=str(RESULTS), help="folder of suite/scale/peers JSON (%(default)s)")
    p.add_argument("--out", default=str(DOCUMENT), help="markdown file to update (%(default)s)")
    p.add_argument("--plots", default=str(PLOTS), help="folder for the PNG plots (%(default)s)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"), help="paired test of two suite runs")
    p.add_argument("--test", choices=["student", "fisher"], default="student")
    args = p.parse_args(argv)
    if args.compare:
        a, b = (expand(json.loads(Path(x).read_text(encoding="utf-8"))) for x in args.compare)
        print(compare_suites(a, b, args.test))
        return 0
    found = load_results(Path(args.results))
    if not found:
        print(f"report.py: no suite.json, scale.json or peers.json in {args.results}", file=sys.stderr)
        return 2
    if not args.no_plots:
        directory = Path(args.plots)
        directory.mkdir(parents=True, exist_ok=True)
        if "scale" in found:
            plot_scale(found["scale"], directory)
        if "suite" in found:
            plot_quality(found["suite"], directory)
    out = Path(args.out)
    document = out.read_text(encoding="utf-8") if out.is_file() else "# Benchmark results\n"
    out.write_text(replace_section(document, build_section(found)), encoding="utf-8")
    print(f"wrote {out}" + ("" if args.no_plots else f" and plots in {args.plots}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
