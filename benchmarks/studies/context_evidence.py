"""Evidence recall of the built context against plain top-k concatenation, on Cranfield.

For every judged query the engine retrieves the top K chunks (hybrid, default features), and
two contexts are made within the same token budget (3000):

* **context**: ``ContextBuilder.build`` (topics, summaries, quoted line windows, Sources list);
  its cited documents are the paths in its Sources list;
* **baseline**: the top chunks, each as ``[i] path:a-b`` and its whole text, concatenated in
  rank order until the next one would pass the budget; its cited documents are those included.

Evidence recall = judged-relevant documents cited / judged-relevant documents; precision =
relevant cited / cited; the ceiling is the recall of the K retrieved documents. Both contexts
see the same retrieval result (one query at the largest K, cut to each smaller K). Build time
is the wall time of ``build`` per query (p50/p95), after a warm-up of 3 queries.

The self-check is measured as a detector of questions the corpus cannot answer: Cranfield's
queries against another collection's (cosqa's, by default), each through ``SelfCheck`` with
default settings; ROC AUC of its confidence and the share of each set it leaves weak. A few
hand-written off-topic questions show each attempt's confidence.

    .venv/bin/python benchmarks/harness.py run context_evidence [--limit N] [--top-k 10 30] [--budget 3000]
    .venv/bin/python benchmarks/harness.py report context_evidence    # RESULTS.md#context-evidence-recall
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.context import ContextBuilder, cached_embed
from hybrid_rag.context.selfcheck import Checked, SelfCheck
from hybrid_rag.engine import Engine
from hybrid_rag.errors import IndexMismatchError
from hybrid_rag.evaluation.experiment import ingest_dataset
from hybrid_rag.evaluation.metrics import load_beir
from hybrid_rag.settings import load_settings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import QueryResult

ROOT = Path(__file__).resolve().parents[2]
DATASET = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets")) / "cranfield"
WORK = Path("/tmp/hybrid-rag-context-evidence")
WARMUP = 3
# Questions the aerodynamics collection cannot answer (one, France, shares words with it): the
# self-check should leave them weak after its retries.
OFF_TOPIC = (
    "how long should sourdough bread proof overnight",
    "who won the 1998 world cup final",
    "how do python list comprehensions work",
    "what is the capital of france",
    "best time of year to plant tomatoes",
    "how does a credit card interest rate compound",
    "symptoms of vitamin d deficiency",
    "how to train a puppy to sit",
)


def baseline_context(result: QueryResult, budget: int) -> tuple[str, list[str]]:
    """Whole chunks in rank order while the total stays within ``budget`` tokens; (text, paths)."""
    text, paths = "", []
    for i, c in enumerate(result.chunks, start=1):
        candidate = text + f"[{i}] {c.citation}\n{c.text}\n\n"
        if count_tokens(candidate) > budget:
            break
        text = candidate
        paths.append(c.path)
    return text, paths


def scores(cited: Sequence[str], relevant: set[str]) -> dict[str, float]:
    docs = set(cited)
    hit = len(docs & relevant)
    return {
        "recall": hit / len(relevant),
        "precision": hit / len(docs) if docs else 0.0,
        "cited": float(len(docs)),
    }


def _pct(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    if not len(arr):
        return {"p50": 0.0, "p95": 0.0, "mean": 0.0}
    return {
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
        "mean": round(float(arr.mean()), 3),
    }


def _wilcoxon(a: Sequence[float], b: Sequence[float]) -> float | None:
    from scipy.stats import wilcoxon

    diff = np.asarray(a) - np.asarray(b)
    if not np.any(diff):
        return None
    return float(wilcoxon(a, b, zero_method="zsplit").pvalue)


def self_check_probe(engine: Engine, question: str) -> dict[str, Any]:
    """The self-check on one question: every attempt's query and confidence, and the verdict."""
    _, checked = engine.context(question, features={"self_check": True})
    assert checked is not None
    return {
        "question": question,
        "attempts": [
            {"query": a.query, "strategy": a.strategy, "confidence": round(a.confidence, 3)}
            for a in checked.attempts
        ],
        "confidence": round(checked.confidence, 3),
        "weak": checked.weak,
    }


def weak_detector(engine: Engine, on_topic: Sequence[str], off_topic: Sequence[str]) -> dict[str, Any]:
    """The self-check as a detector of questions the corpus cannot answer.

    ``on_topic``: the collection's own judged queries; ``off_topic``: another collection's queries.
    For each, the first attempt's confidence and the kept one's, with retries judged against the
    original question (``relevance``, the default) and, for comparison, against the rewrite.
    ROC AUC: how well the confidence ranks on-topic above off-topic (0.5 = chance)."""
    from sklearn.metrics import roc_auc_score

    def retrieve(q: str) -> QueryResult:
        return engine.query(q)

    def run(questions: Sequence[str], relevance: Any) -> list[Checked]:
        return [SelfCheck(engine.settings.context, retrieve, None, relevance).run(q) for q in questions]

    labels = [1] * len(on_topic) + [0] * len(off_topic)
    out: dict[str, Any] = {"on_topic": len(on_topic), "off_topic": len(off_topic)}
    for name, relevance in (("original", engine.retriever.dense_scores), ("rewrite", None)):
        checked = run(on_topic, relevance) + run(off_topic, relevance)
        first = [c.attempts[0].confidence for c in checked]
        kept = [c.confidence for c in checked]
        weak = [c.weak for c in checked]
        out[f"retries_judged_by_{name}"] = {
            "auc_first_attempt": round(float(roc_auc_score(labels, first)), 4),
            "auc_kept_attempt": round(float(roc_auc_score(labels, kept)), 4),
            "weak_share_on_topic": round(float(np.mean(weak[: len(on_topic)])), 4),
            "weak_share_off_topic": round(float(np.mean(weak[len(on_topic) :])), 4),
            "retried_share_on_topic": round(float(np.mean([c.retried for c in checked[: len(on_topic)]])), 4),
            "confidence_on_topic": _pct(kept[: len(on_topic)]),
            "confidence_off_topic": _pct(kept[len(on_topic) :]),
        }
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--limit", type=int, default=0, help="only the first N judged queries (0: all)")
    parser.add_argument("--top-k", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--budget", type=int, default=3000)
    parser.add_argument(
        "--off-topic-dataset",
        default=str(DATASET.parent / "cosqa"),
        help="another collection whose queries the self-check should find weak ('' to skip)",
    )
    parser.add_argument("--work-dir", type=Path, default=WORK, help="kept between runs (store + indices)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = load_beir(args.dataset)
    settings = load_settings(None, data_dir=args.work_dir, environ={})
    engine = Engine(settings)
    try:
        start = time.perf_counter()
        ingest_dataset(engine, data)
        try:
            engine.query("warm-up", top_k=1)
        except IndexMismatchError:  # a kept work dir indexed under other settings
            engine.rebuild()
        ingest_seconds = time.perf_counter() - start
        builder = ContextBuilder(settings.context, cached_embed(engine.embedder, engine.store))
        qids = sorted(data.qrels, key=lambda q: (len(q), q))
        if args.limit:
            qids = qids[: args.limit]
        k_max = max(args.top_k)
        for qid in qids[:WARMUP]:
            builder.build(data.queries[qid], engine.query(data.queries[qid], top_k=k_max))
        per_k: dict[int, dict[str, list[float]]] = {k: {} for k in args.top_k}
        retrieval_ms: list[float] = []
        weak = 0
        confidences: list[float] = []
        for n, qid in enumerate(qids, start=1):
            query = data.queries[qid]
            relevant = set(data.qrels[qid])
            t0 = time.perf_counter()
            full = engine.query(query, top_k=k_max)
            retrieval_ms.append((time.perf_counter() - t0) * 1000)
            for k in args.top_k:
                result = replace(full, chunks=full.chunks[:k])
                t0 = time.perf_counter()
                ctx = builder.build(query, result, args.budget)
                build_ms = (time.perf_counter() - t0) * 1000
                _, base_paths = baseline_context(result, args.budget)
                row = per_k[k]
                for name, value in scores([s.path for s in ctx.sources], relevant).items():
                    row.setdefault(f"context_{name}", []).append(value)
                for name, value in scores(base_paths, relevant).items():
                    row.setdefault(f"baseline_{name}", []).append(value)
                row.setdefault("ceiling_recall", []).append(
                    scores([c.path for c in result.chunks], relevant)["recall"]
                )
                row.setdefault("build_ms", []).append(build_ms)
                row.setdefault("context_tokens", []).append(ctx.token_count)
                row.setdefault("quote_tokens_per_source", []).append(
                    sum(count_tokens(q.text) for q in ctx.quotes) / max(len(ctx.quotes), 1)
                )
                if k == k_max:
                    weak += ctx.weak_evidence
                    confidences.append(ctx.confidence)
            if n % 25 == 0:
                print(f"{n}/{len(qids)} queries", file=sys.stderr, flush=True)
        off_topic = [self_check_probe(engine, q) for q in OFF_TOPIC]
        detector = None
        if args.off_topic_dataset:
            other = load_beir(Path(args.off_topic_dataset))
            foreign = [other.queries[q] for q in sorted(other.qrels, key=lambda q: (len(q), q))]
            detector = weak_detector(engine, [data.queries[q] for q in qids], foreign)
            detector["off_topic_dataset"] = str(args.off_topic_dataset)
        results = {}
        for k, row in per_k.items():
            means = {name: round(statistics.fmean(v), 4) for name, v in row.items() if name != "build_ms"}
            results[str(k)] = {
                **means,
                "build_ms": _pct(row["build_ms"]),
                "wilcoxon_p_recall": _wilcoxon(row["context_recall"], row["baseline_recall"]),
            }
        import torch

        payload: dict[str, Any] = {
            "benchmark": "context_evidence",
            "dataset": str(args.dataset),
            "queries": len(qids),
            "budget_tokens": args.budget,
            "top_k": args.top_k,
            "mode": settings.retrieval.mode,
            "model": engine.embedder.model_name,
            "chunks": engine.store.chunk_count(),
            "ingest_seconds": round(ingest_seconds, 1),
            "retrieval_ms": _pct(retrieval_ms),
            "weak_share_at_max_k": round(weak / len(qids), 4) if qids else 0.0,
            "confidence_at_max_k": {
                **_pct(confidences),
                "p5": round(float(np.percentile(confidences, 5)), 3) if confidences else 0.0,
                "min": round(min(confidences), 3) if confidences else 0.0,
            },
            "off_topic_self_check": {
                "weak_share": round(sum(p["weak"] for p in off_topic) / len(off_topic), 4),
                "probes": off_topic,
            },
            "weak_detector": detector,
            "context_settings": settings.context.model_dump(exclude={"system_prompt", "prompt_template"}),
            "results": results,
            "threads": {
                "torch": torch.get_num_threads(),
                "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
            },
            "protocol": f"one pass, warm-up {WARMUP} queries, build time excludes retrieval",
        }
    finally:
        engine.close()
    return payload


def _p(value: float | None) -> str:
    """``.89``, ``8e-25``: a p-value as RESULTS.md writes it."""
    if value is None:
        return "n/a"
    return f"{value:.2f}".lstrip("0") if value >= 0.01 else f"{value:.0e}"


def render(payload: dict[str, Any]) -> str:
    """Evidence recall per K and method, build time per query, the self-check as a detector."""
    lines = [
        "| results in | method | evidence recall | precision | docs cited | tokens used |",
        "|---|---|---|---|---|---|",
    ]
    for k, r in payload["results"].items():
        p = r["wilcoxon_p_recall"]
        won = p is not None and p < 0.05 and r["context_recall"] > r["baseline_recall"]
        ours = f"{r['context_recall']:.3f}"
        ours = f"**{ours}** (Wilcoxon p = {_p(p)})" if won else ours
        theirs = f"{r['baseline_recall']:.3f}" + ("" if won else f" (Wilcoxon p = {_p(p)})")
        lines.append(
            f"| {k} | ContextBuilder | {ours} | {r['context_precision']:.3f} | {r['context_cited']:.1f} "
            f"| {r['context_tokens']:,.0f} |"
        )
        lines.append(
            f"| {k} | top-k concatenated | {theirs} | {r['baseline_precision']:.3f} "
            f"| {r['baseline_cited']:.1f} | - |"
        )
    lines += ["", "| per query | p50 | p95 |", "|---|---|---|"]
    for k, r in payload["results"].items():
        ms = r["build_ms"]
        lines.append(f"| build, {k} results | {ms['p50']:,.0f} ms | {ms['p95']:,.0f} ms |")
    detector = payload.get("weak_detector")
    if detector:
        own = Path(payload["dataset"]).name
        foreign = Path(detector["off_topic_dataset"]).name
        lines += [
            "",
            "| a retry is judged by its hits' cosine to | ROC AUC, first try | ROC AUC, kept attempt "
            f"| weak: {own} | weak: {foreign} | retried: {own} |",
            "|---|---|---|---|---|---|",
        ]
        for name, label in (
            ("original", "**the original question (default)**"),
            ("rewrite", "the rewritten query (before)"),
        ):
            d = detector[f"retries_judged_by_{name}"]
            weak_foreign = f"{d['weak_share_off_topic']:.1%}"
            weak_foreign = f"**{weak_foreign}**" if name == "original" else weak_foreign
            lines.append(
                f"| {label} | {d['auc_first_attempt']:.4f} | {d['auc_kept_attempt']:.4f} "
                f"| {d['weak_share_on_topic']:.1%} | {weak_foreign} | {d['retried_share_on_topic']:.1%} |"
            )
    return "\n".join(lines)
