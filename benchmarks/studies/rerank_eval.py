"""Does reranking the head of the candidate list help? Offline rerankers on Cranfield and CoSQA.

For each dataset the engine ingests the corpus with the real embedding model (default settings),
then answers every judged query with rerank off in three modes: ``hybrid`` (the shipped fusion),
``dense`` and ``bm25``. The first ``--top-n-in`` candidates of the hybrid list, and separately of
the dense list, are rescored by each offline reranker (embedding windows of several sizes, the
whole chunk, lexical BM25 over the candidates), merged back with ``apply_rerank`` under several
blends, and scored as documents (a chunk's path is its document id, as ``experiment.doc_run``
does) with ``evaluation.evaluate``. Each rerun is compared with its own unreranked list by a paired
t-test. A cross-encoder is tried too and reported as unavailable when no weights are cached.

Timing: the rerank stage (``score`` + ``apply_rerank``) per query, once as run (the window
cache warming up over the hybrid queries, then shared by the dense ones), once with the window
cache off on the first ``--cold-queries`` queries (the cost of a query whose candidates were
never seen).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run rerank_eval [--datasets cranfield cosqa]
    .venv/bin/python benchmarks/harness.py report rerank_eval   # RESULTS.md#rerank from the JSON

Writes ``benchmarks/results/rerank_eval.json``: per dataset, every (list, reranker, blend) with its
means and paired p-values against the list it started from, the rerank stage's latency warm and cold.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.errors import IndexMismatchError, ModelError
from hybrid_rag.evaluation.experiment import doc_run, ingest_dataset, percentiles
from hybrid_rag.evaluation.metrics import BeirDataset, EvalReport, compare, evaluate, load_beir
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.models.rerankers import CrossEncoderReranker
from hybrid_rag.protocols import Reranker
from hybrid_rag.retrieval.rerank import EmbeddingWindowReranker, LexicalReranker, apply_rerank
from hybrid_rag.settings import Settings
from hybrid_rag.types import QueryResult, ScoredChunk, Trace

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
WORK = ROOT / "benchmarks" / "work" / "rerank"
OUT = ROOT / "benchmarks" / "results" / "rerank_eval.json"
METRICS = ("ndcg@10", "mrr@10", "precision@3", "recall@10")
SHOWN = ("ndcg@10", "mrr@10", "precision@3")
LIST_DEPTH = 100  # results kept per query; the reranked head is the first top_n_in of them
BLENDS: tuple[tuple[str, float], ...] = (
    ("none", 1.0),
    ("rrf", 0.5),
    ("rrf", 0.7),
    ("linear", 0.3),
    ("linear", 0.5),
    ("linear", 0.7),
)
RerankerFactory = Callable[[Engine, Settings, int], Reranker]


def window_reranker(words: int, overlap: int) -> RerankerFactory:
    return lambda engine, _s, cache: EmbeddingWindowReranker(engine.embedder, words, overlap, cache)


def lexical_reranker(stemmer: str) -> RerankerFactory:
    def build(_engine: Engine, s: Settings, _cache: int) -> Reranker:
        b = s.bm25
        return LexicalReranker(Tokenizer(b.tokenizer, b.stopwords, stemmer, b.split_identifiers))  # type: ignore[arg-type]

    return build


RERANKERS: dict[str, RerankerFactory] = {
    "windows-16/4": window_reranker(16, 4),
    "windows-32/8": window_reranker(32, 8),
    "windows-64/16": window_reranker(64, 16),
    "whole-chunk": window_reranker(1_000_000, 0),  # one window: the query-chunk cosine
    "lexical": lexical_reranker("none"),
    "lexical-stemmed": lexical_reranker("english"),
}


def as_docs(query: str, chunks: Sequence[ScoredChunk]) -> dict[str, float]:
    return doc_run(QueryResult(query, "rerank", tuple(chunks), Trace()))


def base_lists(
    engine: Engine, data: BeirDataset, mode: str
) -> tuple[dict[str, list[ScoredChunk]], list[float]]:
    lists, seconds = {}, []
    for qid in data.qrels:
        result = engine.query(data.queries[qid], top_k=LIST_DEPTH, mode=mode, features={"rerank": False})
        lists[qid] = list(result.chunks)
        seconds.append(result.trace.total_seconds)
    return lists, seconds


def score_all(
    reranker: Reranker, data: BeirDataset, lists: dict[str, list[ScoredChunk]], top_n_in: int
) -> tuple[dict[str, np.ndarray], list[float]]:
    scores, seconds = {}, []
    for qid, chunks in lists.items():
        start = time.perf_counter()
        scores[qid] = reranker.score(data.queries[qid], chunks[:top_n_in])
        apply_rerank(chunks, scores[qid], reranker.name, top_n_in)
        seconds.append(time.perf_counter() - start)
    return scores, seconds


def metric_row(report: EvalReport, base: EvalReport | None) -> dict[str, Any]:
    row: dict[str, Any] = {"metrics": {m: round(report.means[m], 4) for m in METRICS}}
    if base is not None:
        row["p_vs_base"] = {m: round(c.p_value, 4) for m, c in compare(base, report).items()}
    return row


def run_dataset(
    name: str,
    top_n_in: int,
    cold_queries: int,
    work: Path,
    rerankers: Sequence[str],
    cold_rerankers: Sequence[str],
) -> dict[str, Any]:
    data = load_beir(DATASETS / name)
    settings = Settings().with_overrides({"paths.data_dir": str(work / name)})
    engine = Engine(settings)
    try:
        ingest_seconds = ingest_dataset(engine, data)
        try:
            engine.query("warm up", top_k=5)
        except IndexMismatchError:  # a kept work dir indexed under older settings
            engine.rebuild()
            engine.query("warm up", top_k=5)
        out: dict[str, Any] = {
            "queries": len(data.qrels),
            "chunks": engine.store.chunk_count(),
            "ingest_seconds": round(ingest_seconds, 1),
            "modes": {},
            "reranked": {},
        }
        lists: dict[str, dict[str, list[ScoredChunk]]] = {}
        reports: dict[str, EvalReport] = {}
        for mode in ("hybrid", "dense", "bm25"):
            lists[mode], seconds = base_lists(engine, data, mode)
            runs = {q: as_docs(data.queries[q], c) for q, c in lists[mode].items()}
            reports[mode] = evaluate(runs, data.qrels, METRICS)
            out["modes"][mode] = {**metric_row(reports[mode], None), "query_ms": percentiles(seconds)}
            print(f"[{name}] {mode}: {reports[mode].means}", file=sys.stderr, flush=True)
        for rname in rerankers:
            reranker = RERANKERS[rname](engine, settings, 100_000)  # one window cache for both bases
            for base in ("hybrid", "dense"):
                scores, seconds = score_all(reranker, data, lists[base], top_n_in)
                entry: dict[str, Any] = {"rerank_ms": percentiles(seconds), "blends": {}}
                for blend, weight in BLENDS:
                    runs = {
                        q: as_docs(
                            data.queries[q],
                            apply_rerank(c, scores[q], reranker.name, top_n_in, blend=blend, weight=weight),
                        )
                        for q, c in lists[base].items()
                    }
                    key = blend if blend == "none" else f"{blend}:{weight:g}"
                    entry["blends"][key] = metric_row(evaluate(runs, data.qrels, METRICS), reports[base])
                out["reranked"][f"{base}+{rname}"] = entry
                best = max(entry["blends"].items(), key=lambda kv: kv[1]["metrics"]["ndcg@10"])
                print(
                    f"[{name}] {base}+{rname}: best {best[0]} {best[1]['metrics']}",
                    file=sys.stderr,
                    flush=True,
                )
        out["cold_rerank_ms"] = cold_timings(
            engine, settings, data, lists["hybrid"], top_n_in, cold_queries, cold_rerankers
        )
        out["cross_encoder"] = try_cross_encoder(settings, data, lists["hybrid"], top_n_in)
        return out
    finally:
        engine.close()


def cold_timings(
    engine: Engine,
    settings: Settings,
    data: BeirDataset,
    lists: dict[str, list[ScoredChunk]],
    top_n_in: int,
    n: int,
    rerankers: Sequence[str],
) -> dict[str, Any]:
    """Rerank-stage time with the window cache off: every candidate embedded afresh."""
    subset = dict(list(lists.items())[:n])
    out = {}
    for rname in (r for r in rerankers if r != "lexical-stemmed"):
        _, seconds = score_all(RERANKERS[rname](engine, settings, 0), data, subset, top_n_in)
        out[rname] = percentiles(seconds)
    return {"queries": len(subset), "ms": out}


def try_cross_encoder(
    settings: Settings, data: BeirDataset, lists: dict[str, list[ScoredChunk]], top_n_in: int
) -> dict[str, Any]:
    reranker = CrossEncoderReranker(settings.rerank)
    qid, chunks = next(iter(lists.items()))
    try:
        reranker.score(data.queries[qid], chunks[:top_n_in])
    except ModelError as exc:
        return {"available": False, "error": str(exc)}
    return {"available": True, "note": "cached weights found; not evaluated by this script"}


# -- report ------------------------------------------------------------------------------------

# The rows RESULTS.md#rerank shows: (label, list or reranked entry, blend); None: the list alone.
HEADLINE: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("hybrid, no rerank (default)", ("hybrid",), None),
    ("dense / bm25, no rerank", ("dense", "bm25"), None),
    ("hybrid + embedding windows 64/16, reranker alone", ("hybrid+windows-64/16",), "none"),
    (
        "hybrid + embedding windows 64/16, linear 0.3 (the rerank settings)",
        ("hybrid+windows-64/16",),
        "linear:0.3",
    ),
    ("hybrid + embedding windows 32/8, linear 0.3", ("hybrid+windows-32/8",), "linear:0.3"),
    ("hybrid + lexical (stemmed), linear 0.3", ("hybrid+lexical-stemmed",), "linear:0.3"),
    ("dense + lexical (stemmed), linear 0.5", ("dense+lexical-stemmed",), "linear:0.5"),
)


def _short(value: float) -> str:
    """``.883``, ``-.072``: three decimals without the leading zero."""
    return f"{value:.3f}".replace("0.", ".", 1)


def _cell(d: dict[str, Any], keys: tuple[str, ...], blend: str | None, metric: str = "ndcg@10") -> str:
    if blend is None:
        return " / ".join(_short(d["modes"][k]["metrics"][metric]) for k in keys)
    row = d["reranked"][keys[0]]["blends"][blend]
    base = d["modes"][keys[0].split("+")[0]]["metrics"][metric]
    delta = row["metrics"][metric] - base
    star = "*" if row.get("p_vs_base", {}).get(metric, 1.0) <= 0.05 else ""
    sign = "+" if delta >= 0 else "-"
    return f"{_short(row['metrics'][metric])} ({sign}{_short(abs(delta))}{star})"


def render(result: dict[str, Any]) -> str:
    """nDCG@10 of each headline row on each dataset; Δ against the list the reranker started from."""
    names = [n for n in ("cosqa", "cranfield") if n in result["datasets"]]
    names += [n for n in result["datasets"] if n not in names]
    lines = ["| candidates | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, keys, blend in HEADLINE:
        cells = []
        for name in names:
            d = result["datasets"][name]
            present = all(k in d["modes"] for k in keys) if blend is None else keys[0] in d["reranked"]
            cells.append(_cell(d, keys, blend) if present else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", nargs="+", default=["cranfield", "cosqa"])
    parser.add_argument("--top-n-in", type=int, default=Settings().rerank.top_n_in)
    parser.add_argument("--cold-queries", type=int, default=30)
    parser.add_argument("--work-dir", type=Path, default=WORK)
    parser.add_argument("--rerankers", nargs="+", choices=list(RERANKERS), default=list(RERANKERS))
    parser.add_argument("--cold-rerankers", nargs="*", choices=list(RERANKERS), default=None)
    parser.add_argument(
        "--merge",
        action="store_true",
        help="update these rerankers' entries of the last JSON, keep the others",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    results: dict[str, Any] = {
        "meta": {
            "torch_threads": torch.get_num_threads(),
            "embedding_model": Settings().embedding.model,
            "hybrid": (
                f"{Settings().retrieval.fusion} fusion, dense {Settings().retrieval.dense_weight:g} / "
                f"bm25 {Settings().retrieval.bm25_weight:g}, dense_scoring {Settings().index.dense_scoring}"
            ),
            "top_n_in": args.top_n_in,
            "list_depth": LIST_DEPTH,
            "blends": [list(b) for b in BLENDS],
        },
        "datasets": {},
    }
    last = args.out or OUT
    if args.merge and last.is_file():
        previous = json.loads(last.read_text())
        results["meta"] = {**previous["meta"], "merged": True}
        results["datasets"] = previous["datasets"]
    for name in args.datasets:
        cold = args.rerankers if args.cold_rerankers is None else args.cold_rerankers
        fresh = run_dataset(name, args.top_n_in, args.cold_queries, args.work_dir, args.rerankers, cold)
        old = results["datasets"].get(name)
        if old is not None:
            old["reranked"].update(fresh.pop("reranked"))
            old["cold_rerank_ms"]["ms"].update(fresh.pop("cold_rerank_ms")["ms"])
            old.update(fresh)
        else:
            results["datasets"][name] = fresh
    return results
