"""Markdown tables and the latency plot of the scale study, from its JSON alone."""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

PLOT = "latency_vs_size.png"
RESUMED = " (an ingest stopped and resumed: the seconds are the resumed run's)"
INGEST_BUILD = " (the ingest's own build, spaCy tokenising every chunk)"


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k"


def _gib(n: float | None) -> str:
    return "–" if not n else f"{n / 2**30:.2f} GiB"


def _pp(d: dict[str, float] | None) -> str:
    return "–" if not d else f"{d['p50']:,.1f} / {d['p95']:,.1f}"


def render(result: dict[str, Any]) -> str:
    p = result["protocol"]
    lines = [  # the harness adds the machine and load line under the tables
        f"Corpus `{p['corpus']}`: synthetic Zipfian text, chunks of about "
        f"{p['chunk_words']} words (about 60 cl100k tokens, one MaxP window each), fake-embedder vectors "
        f"(256 dimensions), stores built by the engine's own ingest. {p['queries']} timed queries a row "
        f"after {p['warmup']} warm-up; `Engine.query` top 10 with the default features; searches on one "
        "OpenMP thread. Latency in ms, p50 / p95.",
        "",
        "| chunks | dense index | end to end, expansion on | expansion off | dense search (k 50) "
        "| exact search | "
        "recall@10 | BM25 search | full build | peak RSS |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result.get("latency", []):
        if "error" in row:
            lines.append(f"| {_size(row['size'])} | {row.get('kind')} | {row['error']} |||||||")
            continue
        ann = (row.get("dense_params") or {}).get("ann") or {}
        kind = row["kind"] + (
            f" ({', '.join(f'{k} {v}' for k, v in ann.items() if k != 'kind')})" if ann else ""
        )
        lines.append(
            f"| {_size(row['size'])} | {kind} | {_pp(row['expansion_on']['end_to_end_ms'])} | "
            f"{_pp(row['expansion_off']['end_to_end_ms'])} | {_pp(row['dense_search_ms'])} | "
            f"{_pp(row.get('exact_search_ms') or row['dense_search_ms'])} | "
            f"{row.get('recall_at_10', 1.0):.3f} | "
            f"{_pp(row['bm25_search_ms'])} | {row['build']['total_seconds']:,.1f} s"
            f"{INGEST_BUILD if row['build'].get('from_ingest') else ''} | "
            f"{_gib(row['peak_rss_bytes'])} |"
        )
    lines += ["", "Stage p50 (ms) with expansion on, from the query trace:", ""]
    stages = sorted(
        {s for r in result.get("latency", []) if "error" not in r for s in r["expansion_on"]["stages_p50_ms"]}
    )
    lines += ["| chunks | dense index | " + " | ".join(stages) + " |", "|---:|---|" + "---:|" * len(stages)]
    for row in result.get("latency", []):
        if "error" not in row:
            got = row["expansion_on"]["stages_p50_ms"]
            cells = " | ".join(f"{got[s]:,.1f}" if s in got else "–" for s in stages)
            lines.append(f"| {_size(row['size'])} | {row['kind']} | {cells} |")
    lines += _updates(result) + _quality(result) + _stores(result)
    return "\n".join(lines)


def _updates(result: dict[str, Any]) -> list[str]:
    full = {
        r["size"]: r["build"] for r in result.get("latency", []) if r.get("kind") == "flat" and "build" in r
    }
    lines = [
        "",
        f"One changed file (about 20 chunks replaced) ingested into a store of N chunks, "
        f"{result['protocol']['updates']} times (different files) in one process: the first update "
        "(which also loads the spaCy tokenizer for the new chunks, as every CLI ingest does), then the "
        "median of the others; the index build's seconds against a full build of the same store "
        "(exact dense index; its BM25 reads every chunk's terms from the store's token cache):",
        "",
        "| chunks | full build: total | of it BM25 | first update: total / BM25 | update: index build total "
        "| of it BM25 | read store | dense | write | update / full (total) | update / full (BM25) "
        "| BM25 path |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result.get("updates", []):
        if "error" in row or not row.get("runs"):
            lines.append(f"| {_size(row['size'])} | {row.get('error', 'no run')} ||||||||||")
            continue
        ref = row.get("full_build") or full.get(row["size"])
        first, runs = row["runs"][0], row["runs"][1:] or row["runs"]
        first_cell = f"{first['build_total_seconds']:,.2f} s / {first['build_seconds'].get('bm25', 0):,.2f} s"

        def med(key: str, runs: list[dict[str, Any]] = runs) -> float:
            return median(r["build_seconds"].get(key, 0.0) for r in runs)

        total = median(r["build_total_seconds"] for r in runs)
        ref_total = sum(ref["seconds"].values()) if ref else None
        ref_bm25 = ref["seconds"].get("bm25") if ref else None
        paths = ", ".join(sorted({r["bm25_update"] for r in row["runs"]}))
        full_cells = (
            f"{ref_total:,.2f} s | {ref_bm25:,.2f} s" if ref_total is not None and ref_bm25 else "– | –"
        )
        shares = (
            f"{total / ref_total:.1%} | {med('bm25') / ref_bm25:.1%}" if ref_total and ref_bm25 else "– | –"
        )
        lines.append(
            f"| {_size(row['size'])} | {full_cells} | {first_cell} | {total:,.3f} s | {med('bm25'):,.3f} s | "
            f"{med('read_store'):,.3f} s | {med('dense'):,.3f} s | {med('write'):,.3f} s | {shares} "
            f"| {paths} |"
        )
    return lines


def _quality(result: dict[str, Any]) -> list[str]:
    rows = [q for q in result.get("quality", []) if "error" not in q]
    if not rows:
        return []
    lines = [
        "",
        "ANN quality on the judged collections with the real model "
        "(`sentence-transformers/all-MiniLM-L6-v2`), "
        "every index kind forced (`index.dense_kind`), nDCG@10 and its difference from exact search:",
        "",
        "| dataset | dense | chunks | parameters | dense nDCG@10 | Δ | hybrid nDCG@10 | Δ |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for q in rows:
        flat = q["kinds"].get("flat", {})
        for kind, row in q["kinds"].items():
            d, h = row["dense"]["ndcg@10"], row["hybrid"]["ndcg@10"]
            params = (
                ", ".join(f"{k} {v}" for k, v in (row.get("ann") or {}).items() if k != "kind") or "exact"
            )
            lines.append(
                f"| {q['dataset']} | {kind} | {row['chunks']:,} | {params} | {d:.4f} | "
                f"{d - flat['dense']['ndcg@10']:+.4f} | {h:.4f} | {h - flat['hybrid']['ndcg@10']:+.4f} |"
            )
    return lines


def _stores(result: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "The stores, built once by `Engine.ingestor.ingest_files` (kept and reused by later runs; the "
        "seconds are those of the build, on the shared machine, not under the benchmark lock):",
        "",
        "| chunks | documents | chunk | embed | store | index | ingest total | peak RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in result.get("stores", []):
        if "error" in s:
            continue
        sec = s["seconds"]
        lines.append(
            f"| {s['chunks']:,}{RESUMED if s.get('resumed') else ''} | {s['documents']:,} | "
            f"{sec.get('chunk', 0):,.0f} s | "
            f"{sec.get('embed', 0):,.0f} s | "
            f"{sec.get('store', 0):,.0f} s | {sec.get('index', 0):,.0f} s | {s['wall_seconds']:,.0f} s | "
            f"{_gib(s.get('peak_rss_bytes'))} |"
        )
    return lines


def plot(result: dict[str, Any], directory: Path) -> Path | None:
    """p50 end to end against corpus size, exact vs approximate, expansion on and off (log-log)."""
    rows = [r for r in result.get("latency", []) if "error" not in r]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for kind in sorted({r["kind"] for r in rows}):
        mine = sorted((r for r in rows if r["kind"] == kind), key=lambda r: r["size"])
        sizes = [r["size"] for r in mine]
        for label, style in (("expansion_on", "-o"), ("expansion_off", "--s")):
            ax.plot(
                sizes,
                [r[label]["end_to_end_ms"]["p50"] for r in mine],
                style,
                label=f"{kind}, {label.replace('_', ' ')}",
            )
    ax.axhline(250, color="grey", lw=0.6, ls=":")
    ax.axhline(120, color="grey", lw=0.6, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks")
    ax.set_ylabel("p50 ms, Engine.query end to end")
    ax.set_title("Latency against corpus size: exact (flat) vs approximate (ivf, hnsw)")
    ax.legend(fontsize=7)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / PLOT
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
