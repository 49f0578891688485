"""Query latency on a real repository of 10,000+ chunks: Django's source distribution, as a user
ingests it (code, tests, docs), with the shipped defaults and the real model.

The repository benchmark (``repo_search``) measures quality on three small projects (229-344
chunks); its latency says little about a large repository, where the dense search scans every
definition window. Here ``Django==5.0.6``'s sdist (``pip download --no-binary :all: --no-deps``,
cached in ``benchmarks/work/repo_scale/``) is ingested once into a store with ``Engine.ingest``
(the default settings; a re-run that changes no chunk embeds nothing), then questions are timed
through ``Engine.query`` (top 10, in process: what ``serve`` and MCP pay a query, and what
``hybrid-rag query`` pays after its cold start) with the default features and with expansion off.

Questions: the first sentence of a seeded sample of Django's own function docstrings (the
``repo_search`` candidates; docstrings are kept, so this is a timing run, not a judged one).

    HF_HUB_OFFLINE=1 flock /tmp/hybrid-rag-bench.lock .venv/bin/python benchmarks/harness.py run repo_scale
    .venv/bin/python benchmarks/harness.py report repo_scale
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from typing import Any

from hybrid_rag.evaluation.experiment import percentiles
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import load_settings
from studies import suite
from studies._repo_corpus import Project, candidates, fetch, is_test_path, relative

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work" / "repo_scale"
PROJECT = Project("django", "5.0.6")
TOP_K = 10
WARMUP = 5
VARIANTS: dict[str, dict[str, bool]] = {"default": {}, "no expansion": {"expansion": False}}
STAGES = ("embed_query", "dense", "bm25", "expansion", "fetch", "exact_scores", "fuse", "priors")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", type=int, default=200, help="timed questions (seeded sample)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default=str(WORK), help="sdist and store (%(default)s)")


def questions(root: Path, count: int, seed: int) -> list[str]:
    """First sentences of ``count`` sampled docstrings of the repository's functions."""
    unique = sorted({sentence for _, _, _, sentence in candidates(root)})
    random.Random(seed).shuffle(unique)
    return unique[:count]


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work)
    root = fetch(PROJECT, work / "sdists")
    settings = load_settings(None)
    embedder = make_embedder(settings.embedding)
    engine, _ = suite.open_engine(settings, work / "store", embedder)
    try:
        start = time.perf_counter()
        report = engine.ingest([root])
        ingest_seconds = time.perf_counter() - start
        suite.log(f"repo_scale: ingest {ingest_seconds:.0f} s, {report.embedded} embedded")
        stats = engine.stats()
        live = engine.indices.get()
        dense = live.dense
        windows = dense.window_count if hasattr(dense, "window_count") else len(dense)
        asked = questions(root, args.queries, args.seed)
        variants = {}
        for name, features in VARIANTS.items():
            for q in asked[:WARMUP]:
                engine.query(q, top_k=TOP_K, features=features)
            totals: list[float] = []
            stages: dict[str, list[float]] = {s: [] for s in STAGES}
            test_share: list[float] = []
            for q in asked:
                begin = time.perf_counter()
                result = engine.query(q, top_k=TOP_K, features=features)
                totals.append(time.perf_counter() - begin)
                for s in STAGES:
                    stages[s].append(result.trace.seconds(s))
                rels = [relative(c.path, root) for c in result.chunks]
                test_share.append(sum(is_test_path(r) for r in rels) / max(1, len(rels)))
            ms = percentiles(totals)
            variants[name] = {
                "features": features,
                "ms_p50": round(ms["p50"], 1),
                "ms_p95": round(ms["p95"], 1),
                "stage_ms_p50": {s: round(percentiles(v)["p50"], 2) for s, v in stages.items()},
                "test_share@10": round(statistics.fmean(test_share), 3),
            }
            suite.log(f"repo_scale: {name} p50 {variants[name]['ms_p50']} ms")
    finally:
        engine.close()
    return {
        "format": "hybrid-rag-repo-scale/1",
        "project": PROJECT.spec,
        "store": {
            "documents": stats.documents,
            "chunks": stats.chunks,
            "dense_vectors": int(windows),
            "windows_per_chunk": round(int(windows) / max(1, stats.chunks), 2),
            "ingest_seconds": round(ingest_seconds, 1),
            "embedded_this_run": report.embedded,
        },
        "protocol": {
            "top_k": TOP_K,
            "warmup": WARMUP,
            "queries": len(asked),
            "seed": args.seed,
            "embedder": settings.embedding.model,
            "threads": settings.embedding.threads,
        },
        "variants": variants,
    }


def render(result: dict[str, Any]) -> str:
    store, protocol = result["store"], result["protocol"]
    lines = [
        f"`{result['project']}`'s sdist as a user ingests it: {store['documents']:,} documents, "
        f"**{store['chunks']:,} chunks**, {store['dense_vectors']:,} dense vectors "
        f"({store['windows_per_chunk']} windows a chunk); ingest {store['ingest_seconds']:,} s in the run "
        f"that measured ({store['embedded_this_run']:,} chunks embedded by it). {protocol['queries']} "
        f"questions (docstring first sentences, seed {protocol['seed']}) through `Engine.query`, top "
        f"{protocol['top_k']}, after {protocol['warmup']} warm-up ones; embedder {protocol['embedder']}.",
        "",
        "| features | p50 ms | p95 ms | " + " | ".join(f"{s} p50" for s in STAGES) + " | tests in top 10 |",
        "|---|---:|---:|" + "---:|" * len(STAGES) + "---:|",
    ]
    for name, v in result["variants"].items():
        cells = " | ".join(f"{v['stage_ms_p50'][s]:.1f}" for s in STAGES)
        timing = f"{v['ms_p50']:.1f} | {v['ms_p95']:.1f}"
        lines.append(f"| {name} | {timing} | {cells} | {v['test_share@10']:.2f} |")
    return "\n".join(lines) + "\n"
