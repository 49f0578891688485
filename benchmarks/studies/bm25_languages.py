"""BM25 alone on each XQuAD language and on cranfield/cosqa: English-only analysis against each
language's own (``bm25.languages``), through ``Engine.query`` in ``bm25`` mode.

For every dataset the corpus is ingested once per variant (the BM25 index differs; the dense
side is the hash embedder, unused in ``bm25`` mode), every judged query is asked, and ranx scores
MRR@10, nDCG@10 and Recall@10. The store's chunk languages and the queries' detected languages
are recorded beside the figures.

    .venv/bin/python benchmarks/harness.py run bm25_languages    # -> results/bm25_languages.json
    .venv/bin/python benchmarks/harness.py run bm25_languages --only xquad_ru --max-queries 50
    .venv/bin/python benchmarks/harness.py report bm25_languages
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
from hybrid_rag.evaluation.metrics import load_beir
from hybrid_rag.lang.detect import detect_language
from hybrid_rag.settings import Settings
from studies.suite import DATASETS, find_datasets, limit_queries

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work" / "bm25_languages"
XQUAD = ("en", "de", "es", "ar", "el", "tr", "vi", "hi", "th", "ro", "ru")
DEFAULT_ONLY = [f"xquad_{c}" for c in XQUAD] + ["cranfield", "cosqa"]
VARIANTS: dict[str, dict[str, Any]] = {
    "english_only": {"bm25.languages": False},  # the analysis of before: every text as English
    "per_language": {"bm25.languages": True},  # the default now
    "per_language_no_stop": {"bm25.languages": True, "bm25.stopwords": "none"},
}
METRICS = ("mrr@10", "ndcg@10", "recall@10")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder of BEIR datasets (%(default)s)")
    p.add_argument("--only", nargs="*", default=DEFAULT_ONLY, help="dataset names (default: %(default)s)")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), help="of: " + ", ".join(VARIANTS))
    p.add_argument("--max-queries", type=int, default=None, help="evaluate this many judged queries")
    p.add_argument("--work", default=str(WORK), help="ingested stores (%(default)s; rebuilt every run)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for folder in find_datasets(Path(args.datasets), args.only):
        dataset = limit_queries(load_beir(folder), args.max_queries)
        detected = Counter(detect_language(q).code for q in dataset.queries.values())
        for variant in args.variants:
            work = Path(args.work) / dataset.name / variant
            shutil.rmtree(work, ignore_errors=True)
            overrides = {"paths.data_dir": str(work), "embedding.model": "fake", **VARIANTS[variant]}
            engine = Engine(Settings().with_overrides(overrides))
            try:
                seconds = ingest_dataset(engine, dataset)
                chunk_langs = engine.store.language_counts()
                start = time.perf_counter()
                result = evaluate_engine(engine, dataset, mode="bm25", warmup=0, ingest_seconds=seconds)
                query_seconds = time.perf_counter() - start
            finally:
                engine.close()
            means = result.report.means
            rows.append(
                {
                    "dataset": dataset.name,
                    "variant": variant,
                    "queries": result.queries,
                    "chunks": result.chunks,
                    "metrics": {m: round(means[m], 4) for m in METRICS if m in means},
                    "chunk_languages": chunk_langs,
                    "query_languages": dict(detected.most_common()),
                    "ingest_s": round(seconds, 2),
                    "query_p50_ms": round(result.latency_ms["wall"]["p50"], 2),
                    "queries_s": round(query_seconds, 2),
                }
            )
            mrr, ndcg = means["mrr@10"], means["ndcg@10"]
            log(f"{dataset.name:12} {variant:22} MRR@10 {mrr:.4f}  nDCG@10 {ndcg:.4f}")
    return {"variants": {name: VARIANTS[name] for name in args.variants}, "rows": rows}


def render(result: dict[str, Any]) -> str:
    variants = list(result["variants"])
    by = {(r["dataset"], r["variant"]): r for r in result["rows"]}
    datasets = list(dict.fromkeys(r["dataset"] for r in result["rows"]))
    head = "| dataset | chunks' languages | queries' detected | " + " | ".join(
        f"{v} MRR@10 / nDCG@10" for v in variants
    )
    lines = [head + " |", "|---|---|---|" + "---|" * len(variants)]
    for name in datasets:
        first = next(by[(name, v)] for v in variants if (name, v) in by)
        langs = ", ".join(f"{k} {n}" for k, n in list(first["chunk_languages"].items())[:3])
        queries = ", ".join(f"{k} {n}" for k, n in list(first["query_languages"].items())[:3])
        cells = []
        for v in variants:
            row = by.get((name, v))
            cells.append(
                "" if row is None else f"{row['metrics']['mrr@10']:.3f} / {row['metrics']['ndcg@10']:.3f}"
            )
        lines.append(f"| {name} | {langs} | {queries} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
