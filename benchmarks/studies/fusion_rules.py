"""Fusion rules on every judged set, on the same chunks and vectors: the default (z-score over
exact scores, weights by source type) against RRF, LlamaIndex's relative-score fusion and
distribution-based score fusion (DBSF), each as the engine would run it and in the peers' own form.

Each set is ingested once (the model as ``embedding.model: auto`` resolves it for cranfield and
cosqa; multilingual-e5-small for every XQuAD set and ``xquad_ru>en``, as section 29.5 and the
issue's peer comparison use it) and every judged question goes once through ``Engine.query`` with
the shipped settings. At the fusion step the study takes the stage lists the engine built (the
first pass, PRF expansion, symbol list; the reading's weights) and fuses them by every rule
offline, so each rule sees the very same lists; the engine's own answer is kept beside them
(``engine``) to check that the offline ``default`` is what users get (``agree``: the share of
questions whose top-10 documents are identical). Rules:

* ``default``: ``retrieval.fusion: zscore`` (exact scores, weights by source type);
* ``dbsf`` / ``relative_score`` / ``rrf``: ``retrieval.fusion`` set to that rule, all else default
  (RRF reads the lists as retrieved; the score rules the lists completed with exact scores);
* ``dbsf, as retrieved`` / ``relative_score, as retrieved``: the same over the lists as retrieved
  (``retrieval.exact_scores: false``);
* ``relative_score (LlamaIndex)`` / ``dbsf (Qdrant)``: the peers' form: the first-pass dense and
  BM25 lists only, as retrieved, equal weights (``QueryFusionRetriever`` with two retrievers).
* ``dense`` / ``bm25``: the first-pass lists alone (BM25 is empty where the reading skipped it).

Every figure is paired by question against ``default`` (mean difference and its 95% half-width,
normal approximation). Vectors of the XQuAD sets are memoised under ``--work``.

    nice -n 10 .venv/bin/python benchmarks/harness.py run fusion_rules [--only cranfield ...]
    .venv/bin/python benchmarks/harness.py report fusion_rules
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import doc_run, embedding_model, ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset, evaluate, load_beir
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.retrieval.fusion import Fused, FusionMode, fuse_runs, single_list
from hybrid_rag.settings import Settings
from studies.languages import MemoEmbedder, cross_lingual, subset

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
WORK = ROOT / "benchmarks" / "work" / "fusion_rules"
E5 = "multilingual-e5-small"
METRICS = ("mrr@10", "ndcg@10")
TOP_K = 100
DEFAULT = "default"
RULES = (
    DEFAULT,
    "dbsf",
    "relative_score",
    "rrf",
    "dbsf, as retrieved",
    "relative_score, as retrieved",
    "relative_score (LlamaIndex)",
    "dbsf (Qdrant)",
    "dense",
    "bm25",
)
PEER_WEIGHTS = {"dense": 0.5, "bm25": 0.5}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fuse_every_rule(
    fuse: Callable[..., list[Fused]], candidates: Any, runs: Any, rows: Any, reading: Any
) -> dict[str, list[Fused]]:
    """Every rule over the lists one query's retrieval built (``fuse``: the engine's own step)."""
    retrieved = candidates.runs
    first = {name: retrieved[name] for name in ("dense", "bm25") if retrieved.get(name)}
    out = {
        DEFAULT: fuse(candidates, runs, rows, reading, FusionMode.ZSCORE),
        "dbsf": fuse(candidates, runs, rows, reading, FusionMode.DBSF),
        "relative_score": fuse(candidates, runs, rows, reading, FusionMode.RELATIVE_SCORE),
        "rrf": fuse(candidates, retrieved, rows, reading, FusionMode.RRF),
        "dbsf, as retrieved": fuse(candidates, retrieved, rows, reading, FusionMode.DBSF),
        "relative_score, as retrieved": fuse(candidates, retrieved, rows, reading, FusionMode.RELATIVE_SCORE),
        "relative_score (LlamaIndex)": fuse_runs(first, FusionMode.RELATIVE_SCORE, PEER_WEIGHTS),
        "dbsf (Qdrant)": fuse_runs(first, FusionMode.DBSF, PEER_WEIGHTS),
    }
    for name in ("dense", "bm25"):
        out[name] = single_list(retrieved.get(name, []), name)
    return out


def doc_ranking(fused: Sequence[Fused], rows: Mapping[int, Any], k: int = TOP_K) -> dict[str, float]:
    """Chunks -> documents (a chunk's path is its document id), each at its best rank."""
    run: dict[str, float] = {}
    for rank, f in enumerate(fused[:k]):
        row = rows.get(f.id)
        if row is not None:
            run.setdefault(row.path, float(k - rank))
    return run


def top10(run: Mapping[str, float]) -> list[str]:
    return [d for d, _ in sorted(run.items(), key=lambda x: -x[1])[:10]]


def measure(ds: BeirDataset, engine: Engine) -> dict[str, Any]:
    """Every judged question through the engine; every rule fused from the lists it built."""
    retriever = engine.retriever
    original = retriever.fuse
    captured: dict[str, dict[str, float]] = {}

    def capture(candidates: Any, runs: Any, rows: Any, reading: Any, rule: Any = None) -> list[Fused]:
        for name, fused in fuse_every_rule(original, candidates, runs, rows, reading).items():
            captured[name] = doc_ranking(fused, rows)
        return original(candidates, runs, rows, reading, rule)

    retriever.fuse = capture  # type: ignore[method-assign]
    runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in (*RULES, "engine")}
    notes: set[str] = set()
    start = time.perf_counter()
    try:
        for n, qid in enumerate(ds.qrels):
            captured.clear()
            result = engine.query(ds.queries[qid], top_k=TOP_K)
            notes.update(x for x in result.trace.notes if "skipped" in x)
            runs["engine"][qid] = doc_run(result)
            for name in RULES:
                runs[name][qid] = dict(captured.get(name, {}))
            if n % 100 == 99:
                log(f"  {ds.name}: {n + 1}/{len(ds.qrels)} questions")
    finally:
        retriever.fuse = original  # type: ignore[method-assign]
    seconds = time.perf_counter() - start
    per_query = {name: evaluate(run, ds.qrels, METRICS).per_query for name, run in runs.items()}
    agree = np.mean([top10(runs["engine"][q]) == top10(runs[DEFAULT][q]) for q in ds.qrels])
    return {
        "questions": len(ds.qrels),
        "documents": len(ds.corpus),
        "chunks": engine.store.chunk_count(),
        "query_seconds": round(seconds, 1),
        "agree": round(float(agree), 4),
        "notes": sorted(notes)[:5],
        "per_query": {
            name: {m: [round(float(pq[m][q]), 4) for q in sorted(pq[m])] for m in METRICS}
            for name, pq in per_query.items()
        },
    }


def load_sets(root: Path, only: Sequence[str], max_queries: int | None) -> list[tuple[BeirDataset, str]]:
    """(set, model) pairs: cranfield and cosqa with ``auto``; every XQuAD set and xquad_ru>en with e5."""
    sets: list[tuple[BeirDataset, str]] = [(load_beir(root / n), "auto") for n in ("cranfield", "cosqa")]
    xquad = sorted(p.name for p in root.glob("xquad_*") if (p / "corpus.jsonl").is_file())
    sets += [(subset(load_beir(root / n), max_queries), E5) for n in xquad]
    sets.append((cross_lingual(root, max_queries), E5))
    if only:
        by_name = {ds.name: (ds, model) for ds, model in sets}
        sets = [by_name[name] for name in only if name in by_name]
    return sets


def measure_set(ds: BeirDataset, model: str, work: Path) -> dict[str, Any]:
    base = Settings()
    with tempfile.TemporaryDirectory(prefix="hybrid-rag-fusion-rules-") as tmp:
        settings = base.with_overrides({"paths.data_dir": tmp, "embedding.model": model})
        memo = None
        if model != "auto":
            inner = make_embedder(settings.embedding.model_copy(update={"threads": 1}))
            tag = hashlib.sha1("|".join(sorted(ds.corpus)).encode() + ds.name[-2:].encode()).hexdigest()[:8]
            memo = MemoEmbedder(inner, work / f"vectors-{tag}-{os.getpid()}.npz")
        engine = Engine(settings, embedder=memo)
        try:
            t0 = time.perf_counter()
            ingest_dataset(engine, ds)
            ingest = time.perf_counter() - t0
            if memo is not None:
                memo.save()
            out = {"model": embedding_model(engine)[0], "ingest_seconds": round(ingest, 1)}
            out.update(measure(ds, engine))
        finally:
            engine.close()
            if memo is not None:
                memo.save()
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder of the judged sets (%(default)s)")
    p.add_argument("--only", nargs="*", default=(), help="these sets (cranfield, xquad_ru>en, ...)")
    p.add_argument("--max-queries", type=int, default=None, help="XQuAD questions per set, spread evenly")
    p.add_argument("--work", default=str(WORK), help="memoised XQuAD vectors (%(default)s)")
    p.add_argument("--partial", default=None, help="also write what is measured so far to this file")


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work)
    result: dict[str, Any] = {"max_queries": args.max_queries, "sets": {}}
    for ds, model in load_sets(Path(args.datasets), args.only, args.max_queries):
        log(f"{ds.name} ({model}): {len(ds.corpus)} documents, {len(ds.qrels)} questions")
        row = measure_set(ds, model, work)
        result["sets"][ds.name] = summarize(row)
        log(
            f"  {ds.name}: "
            + json.dumps({r: result["sets"][ds.name]["rules"][r]["mrr@10"] for r in RULES[:4]})
        )
        if args.partial:
            Path(args.partial).write_text(json.dumps(result), encoding="utf-8")
    return result


# -- report ----------------------------------------------------------------------------------------


def paired(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean of a - b and its 95% half-width (normal approximation)."""
    d = np.asarray(a) - np.asarray(b)
    half = 1.96 * float(d.std(ddof=1)) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return float(d.mean()), half


def summarize(row: Mapping[str, Any]) -> dict[str, Any]:
    """A set's row with its per-question figures replaced by each rule's mean and its paired
    difference to the default (what is committed; the per-question lists are large)."""
    per_query = row["per_query"]
    rules: dict[str, Any] = {}
    for rule, figures in per_query.items():
        rules[rule] = {}
        for m in METRICS:
            diff, half = paired(figures[m], per_query[DEFAULT][m])
            rules[rule][m] = {"mean": round(float(np.mean(figures[m])), 4), "diff": round(diff, 4)}
            rules[rule][m]["ci95"] = round(half, 4)
    out = {k: v for k, v in row.items() if k != "per_query"}
    out["notes"] = [n for n in row.get("notes", []) if "skipped" in n]
    out["rules"] = rules
    return out


def cell(row: Mapping[str, Any], rule: str, metric: str) -> str:
    figure = row["rules"][rule][metric]
    if rule == DEFAULT:
        return f"**{figure['mean']:.3f}**"
    diff, half = figure["diff"], figure["ci95"]
    mark = "+" if diff - half > 0 else ("−" if diff + half < 0 else "")
    return f"{figure['mean']:.3f} ({diff:+.3f} ± {half:.3f}){mark}"


def render(result: Mapping[str, Any]) -> str:
    sets = {n: row if "rules" in row else summarize(row) for n, row in result["sets"].items()}
    names = list(sets)
    lines = []
    for metric in METRICS:
        lines.append(f"{metric.upper()}, each rule − default (95%); `+`/`−`: the interval excludes 0:\n")
        lines.append("| rule | " + " | ".join(names) + " |")
        lines.append("|---" * (len(names) + 1) + "|")
        for rule in RULES:
            lines.append(f"| {rule} | " + " | ".join(cell(sets[n], rule, metric) for n in names) + " |")
        lines.append("")
    lines.append("| set | model | questions | chunks | ingest s | queries s | engine = offline |")
    lines.append("|---|---|---|---|---|---|---|")
    for n in names:
        r = sets[n]
        lines.append(
            f"| {n} | {r['model']} | {r['questions']} | {r['chunks']} | {r['ingest_seconds']} | "
            f"{r['query_seconds']} | {r['agree']:.3f} |"
        )
    return "\n".join(lines)
