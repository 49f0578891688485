"""Mixed corpus: query routing and per-source-type score floors, where they can matter.

cosqa is all code and cranfield all prose, so on its own store neither stage can do much: routing
can only narrow cosqa to what it already is, and a floor per source type is just one floor. Here
both corpora go into one store (cosqa as ``source_type=code``, cranfield as ``text``, each its own
collection) and both judged query sets run against it, so a code question can drown in prose and a
prose question in code. For every configuration and query set: nDCG@10, MRR@10, P@3, R@50 (ranx,
per document, as the suite), a paired t-test per metric against ``default`` (``bm25 +routing``:
against ``bm25``), how often routing fired, the share of results of the other source type (in the
top 10 and in all), and the mean number of results left.

    # ingest once (~9 min on 2 busy cores; kept in benchmarks/work/mixed/), then ~3 min
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run mixed_corpus
    .venv/bin/python benchmarks/harness.py run mixed_corpus --out /tmp/m.json --fake --max-queries 20
    .venv/bin/python benchmarks/harness.py report mixed_corpus     # the markdown table from the JSON

Floors are on the final score, which without rerank is the z-score fusion score (each list
standardised over the query's candidates, so 0 is "as good as the average candidate"): the grid
spans the upper part of that scale. ``render`` gives the table of RESULTS.md#mixed-corpus.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import doc_run, ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset, EvalReport, compare, evaluate, load_beir
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.protocols import Embedder
from hybrid_rag.retrieval.routing import looks_like_code_query
from hybrid_rag.settings import Settings, load_settings
from hybrid_rag.types import SourceType
from studies._compact import compact_per_query

ROOT = Path(__file__).resolve().parents[2]

DATASETS = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
WORK = ROOT / "benchmarks" / "work" / "mixed"
FORMAT = "hybrid-rag-mixed/2"  # /2: per-query arrays, ids once (query_ids)
QUERY_SETS: Mapping[str, SourceType] = {"cosqa": SourceType.CODE, "cranfield": SourceType.TEXT}
METRICS = ("ndcg@10", "mrr@10", "precision@3", "recall@50")
TOP_K = 100  # as the suite: enough for R@50
WARMUP = 3
DIGITS = 6
ROUTED_NOTE = "routed to source_type=code"


@dataclass(frozen=True)
class Variant:
    """One row: per-call feature flags and settings overrides on top of the shipped defaults."""

    name: str
    description: str
    features: Mapping[str, bool] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    mode: str | None = None  # None: the settings' retrieval.mode (hybrid)
    baseline: str = "default"  # the row this one is tested against (paired, per query)


FLOORS = (0.0, 0.5, 1.0)
VARIANTS: tuple[Variant, ...] = (
    Variant("default", "the shipped settings (routing off, no floors)"),
    Variant("+routing", "code-looking queries search source_type=code only", {"routing": True}),
    Variant("bm25", "BM25 alone: a retriever that cannot tell code from prose by meaning", mode="bm25"),
    Variant(
        "bm25 +routing",
        "BM25 alone, code-looking queries routed to code",
        {"routing": True},
        mode="bm25",
        baseline="bm25",
    ),
    *(
        Variant(
            f"code>={t:g}",
            f"drop code results scoring below {t:g}",
            overrides={"retrieval.min_score_code": t},
        )
        for t in FLOORS
    ),
    *(
        Variant(
            f"text>={t:g}",
            f"drop text results scoring below {t:g}",
            overrides={"retrieval.min_score_text": t},
        )
        for t in FLOORS
    ),
    *(
        Variant(
            f"both>={t:g}",
            f"drop code and text results scoring below {t:g}",
            overrides={"retrieval.min_score_code": t, "retrieval.min_score_text": t},
        )
        for t in FLOORS
    ),
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def limit_queries(dataset: BeirDataset, n: int | None) -> BeirDataset:
    """The first ``n`` judged queries (all when None): a quick look, not a measurement."""
    if n is None or n >= len(dataset.qrels):
        return dataset
    kept = list(dataset.qrels)[:n]
    return BeirDataset(
        dataset.name,
        dataset.corpus,
        {q: dataset.queries[q] for q in kept},
        {q: dataset.qrels[q] for q in kept},
    )


def ingest_mixed(datasets: Sequence[BeirDataset], settings: Settings, embedder: Embedder) -> dict[str, Any]:
    """Every corpus into one store (incremental: a kept store costs a comparison of hashes)."""
    seen: set[str] = set()
    for d in datasets:
        clash = seen & set(d.corpus)
        if clash:
            raise SystemExit(
                f"mixed_corpus.py: document ids in more than one corpus, e.g. {sorted(clash)[:3]}"
            )
        seen |= set(d.corpus)
    engine = Engine(settings, embedder=embedder)
    try:
        seconds = {d.name: round(ingest_dataset(engine, d), 3) for d in datasets}
        documents: dict[str, dict[str, int]] = {}
        for doc in engine.store.documents():
            per = documents.setdefault(doc.collection, {})
            per[doc.source_type.value] = per.get(doc.source_type.value, 0) + 1
        by_type: dict[str, int] = {}
        for chunk in engine.store.chunks(engine.store.all_chunk_ids().tolist()).values():
            by_type[chunk.source_type.value] = by_type.get(chunk.source_type.value, 0) + 1
        return {
            "work_dir": str(settings.paths.data_dir),
            "seconds": seconds,
            "chunks": engine.store.chunk_count(),
            "chunks_by_source_type": by_type,
            "documents_by_collection_and_type": documents,
        }
    finally:
        engine.close()


def run_variant(
    engine: Engine, dataset: BeirDataset, variant: Variant, expected: SourceType
) -> dict[str, Any]:
    """Every judged query of ``dataset`` through ``Engine.query``: the doc run and what routing did."""
    features = dict(variant.features)
    for qid in list(dataset.qrels)[:WARMUP]:
        engine.query(dataset.queries[qid], top_k=10, mode=variant.mode, features=features)
    runs: dict[str, dict[str, float]] = {}
    routed, wrong, wrong_all, returned, seconds = {}, {}, {}, {}, []
    for qid in dataset.qrels:
        start = time.perf_counter()
        result = engine.query(dataset.queries[qid], top_k=TOP_K, mode=variant.mode, features=features)
        seconds.append(time.perf_counter() - start)
        runs[qid] = doc_run(result)
        routed[qid] = any(n.startswith(ROUTED_NOTE) for n in result.trace.notes)
        top = result.chunks[:10]
        wrong[qid] = sum(c.source_type is not expected for c in top) / len(top) if top else 0.0
        every = result.chunks
        wrong_all[qid] = sum(c.source_type is not expected for c in every) / len(every) if every else 0.0
        returned[qid] = len(result.chunks)
    return {
        "run": runs,
        "routed": routed,
        "wrong_top10": wrong,
        "wrong_all": wrong_all,
        "returned": returned,
        "seconds": seconds,
    }


def record(
    variant: Variant,
    dataset: BeirDataset,
    got: Mapping[str, Any],
    report: EvalReport,
    base: EvalReport | None,
) -> dict[str, Any]:
    tests = compare(base, report) if base is not None else {}
    routed = got["routed"]
    return {
        "config": variant.name,
        "description": variant.description,
        "mode": variant.mode,
        "features": dict(variant.features),
        "overrides": dict(variant.overrides),
        "query_set": dataset.name,
        "baseline": variant.baseline if base is not None else None,
        "queries": len(dataset.qrels),
        "metrics": {m: round(report.means[m], DIGITS) for m in METRICS},
        "vs_default": {
            m: {"delta": round(c.delta, DIGITS), "p": round(c.p_value, DIGITS)} for m, c in tests.items()
        },
        "routed_share": round(sum(routed.values()) / len(routed), DIGITS),
        "wrong_type_top10": round(float(np.mean(list(got["wrong_top10"].values()))), DIGITS),
        "wrong_type_all_results": round(float(np.mean(list(got["wrong_all"].values()))), DIGITS),
        "queries_with_wrong_type_top10": round(
            sum(v > 0 for v in got["wrong_top10"].values()) / len(routed), DIGITS
        ),
        "mean_results": round(float(np.mean(list(got["returned"].values()))), 2),
        "empty_results": sum(v == 0 for v in got["returned"].values()),
        "latency_ms_p50": round(float(np.percentile(got["seconds"], 50)) * 1000, 2),
        "per_query": {
            "ndcg@10": {q: round(v, DIGITS) for q, v in report.per_query["ndcg@10"].items()},
            "routed": [q for q, r in routed.items() if r],
        },
    }


def router_share(dataset: BeirDataset) -> float:
    """The share of the query set that ``looks_like_code_query`` calls code (what +routing will route)."""
    return sum(looks_like_code_query(dataset.queries[q]) for q in dataset.qrels) / len(dataset.qrels)


def score_profile(engine: Engine, dataset: BeirDataset, expected: SourceType) -> dict[str, Any]:
    """Quantiles of the default's final scores in the top 10, by right / wrong source type and by
    judged relevance: where a floor would cut."""
    groups: dict[str, list[float]] = {"right_type_relevant": [], "right_type_other": [], "wrong_type": []}
    for qid in dataset.qrels:
        for c in engine.query(dataset.queries[qid], top_k=10).chunks:
            if c.source_type is not expected:
                groups["wrong_type"].append(c.score)
            elif dataset.qrels[qid].get(c.path, 0) > 0:
                groups["right_type_relevant"].append(c.score)
            else:
                groups["right_type_other"].append(c.score)
    qs = (5, 25, 50, 75, 95)
    return {
        g: {"n": len(v), **({f"p{q}": round(float(np.percentile(v, q)), 3) for q in qs} if v else {})}
        for g, v in groups.items()
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    base = load_settings(args.config)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    base = base.with_overrides({"paths.data_dir": str(Path(args.work))})
    datasets = [limit_queries(load_beir(Path(args.datasets) / name), args.max_queries) for name in QUERY_SETS]
    embedder = make_embedder(base.embedding)
    log(f"ingest {', '.join(d.name for d in datasets)} into {args.work}")
    store = ingest_mixed(datasets, base, embedder)
    log(f"ingest {store['seconds']} s; {store['chunks']} chunks {store['chunks_by_source_type']}")
    results: list[dict[str, Any]] = []
    profiles: dict[str, Any] = {}
    reports: dict[tuple[str, str], EvalReport] = {}
    for variant in VARIANTS:
        settings = base.with_overrides(dict(variant.overrides)) if variant.overrides else base
        engine = Engine(settings, embedder=embedder)
        try:
            for dataset in datasets:
                expected = QUERY_SETS[dataset.name]
                if variant.name == "default":
                    profiles[dataset.name] = score_profile(engine, dataset, expected)
                got = run_variant(engine, dataset, variant, expected)
                report = evaluate(got["run"], dataset.qrels, METRICS)
                baseline = (
                    None if variant.baseline == variant.name else reports[variant.baseline, dataset.name]
                )
                row = record(variant, dataset, got, report, baseline)
                reports[variant.name, dataset.name] = report
                results.append(row)
                m = row["metrics"]
                log(
                    f"{dataset.name:9} {variant.name:10} nDCG@10 {m['ndcg@10']:.3f} MRR@10 {m['mrr@10']:.3f} "
                    f"routed {row['routed_share']:.2f} wrong-type@10 {row['wrong_type_top10']:.3f}"
                )
        finally:
            engine.close()
    return {
        "format": FORMAT,
        "protocol": {
            "warmup_queries": WARMUP,
            "top_k": TOP_K,
            "embedder": "fake" if args.fake else base.embedding.model,
            "max_queries": args.max_queries,
            "torch_threads": args.torch_threads or "default",
            "scoring": "ranx per document (a document at its best chunk); paired two-sided t-test vs default",
            "fusion": {
                k: v
                for k, v in base.retrieval.model_dump(mode="json").items()
                if k
                in (
                    "fusion",
                    "exact_scores",
                    "dense_weight",
                    "bm25_weight",
                    "code_dense_weight",
                    "code_bm25_weight",
                )
            },
        },
        "store": store,
        "query_sets": {
            d.name: {
                "expected_source_type": QUERY_SETS[d.name].value,
                "queries": len(d.qrels),
                "looks_like_code": round(router_share(d), DIGITS),
                "default_top10_scores": profiles.get(d.name),
            }
            for d in datasets
        },
        "variants": [
            {
                "name": v.name,
                "description": v.description,
                "mode": v.mode,
                "features": dict(v.features),
                "overrides": dict(v.overrides),
                "baseline": v.baseline,
            }
            for v in VARIANTS
        ],
        **compact_results(results),
    }


def compact_results(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The rows with their per-query values as arrays, the query ids once per query set."""
    rows, ids = compact_per_query(results, "query_set")
    return {"query_ids": ids, "results": rows}


# -- report ----------------------------------------------------------------------------------------


def _cell(row: Mapping[str, Any], metric: str) -> str:
    value = f"{row['metrics'][metric]:.3f}"
    test = row["vs_default"].get(metric)
    if test is None or abs(test["delta"]) < 0.0005:
        return value
    star = "*" if test["p"] < 0.05 else ""
    return f"{value} ({test['delta']:+.3f}{star})"


def render(data: Mapping[str, Any]) -> str:
    """The markdown table: one row a configuration and query set."""
    lines = [
        "| configuration | query set | nDCG@10 | MRR@10 | P@3 | R@50 | routed | other type: top 10 "
        "| other type: all | results |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in sorted(
        data["results"],
        key=lambda r: (r["query_set"], [v["name"] for v in data["variants"]].index(r["config"])),
    ):
        cells = [
            row["config"],
            row["query_set"],
            *(_cell(row, m) for m in METRICS),
            f"{row['routed_share']:.0%}",
            f"{row['wrong_type_top10']:.1%}",
            f"{row['wrong_type_all_results']:.1%}",
            f"{row['mean_results']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--datasets", default=str(DATASETS), help="folder holding cosqa/ and cranfield/ (%(default)s)"
    )
    p.add_argument("--config", help="base settings YAML (default: the built-in defaults)")
    p.add_argument(
        "--fake", action="store_true", help="the hash embedder instead of the model (plumbing only)"
    )
    p.add_argument("--max-queries", type=int, default=None, help="this many judged queries per query set")
    p.add_argument("--work", default=str(WORK), help="the mixed store, kept between runs (%(default)s)")
    p.add_argument(
        "--torch-threads", type=int, default=1, help="torch threads (default 1, as the suite; 0: torch's)"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    return measure(args)
