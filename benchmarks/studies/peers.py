"""Peers, measured in the same run on the same chunks and vectors, reported as ratios to ours.

On every judged dataset (the chunks and window vectors the suite ingested, read back from the
store and its embedding cache) and on a synthetic corpus (``_scale_legacy.py``, speed only):

* rank-bm25 ``BM25Okapi`` on whitespace tokens (LangChain's ``BM25Retriever`` default) and on our
  tokenizer's terms; bm25s with its own tokenizer, English stop words and Snowball stemmer
  (LlamaIndex's ``BM25Retriever`` default) and on our terms (the same index as ours: the same
  nDCG, and the time ratio is our wrapper's overhead);
* Faiss ``IndexFlatIP`` used directly over the same vectors (pooled, and MaxP windows with the
  best window per chunk), on one OpenMP thread as we run it, and with Faiss's default threads;
* a plain-Python cosine loop over a JSON file of the pooled embeddings (what simple RAG code does).

Every system returns its top 100 per query (``--depth``), scored per document like the suite.
Query vectors are embedded once and shared, so dense timings are the search alone; our
``Engine.query`` rows (embedding, search and fetch) are there for context.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run peers   # after the suite (its stores)
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.evaluation.experiment import percentiles
from hybrid_rag.evaluation.metrics import chunks_to_doc_scores, evaluate, load_beir
from hybrid_rag.indices.dense import FaissVectorIndex, _one_openmp_thread
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import load_settings
from hybrid_rag.vectors import pool_windows
from studies._suite_configs import index_key
from studies._suite_tables import ms
from studies.suite import DATASETS, WORK, find_datasets, ingest, limit_queries, log, open_engine

DEPTH = 100
Search = Callable[[int], list[tuple[int, float]]]  # query index -> [(row, score)], best first


def timed(
    search: Search, n_queries: int, warmup: int
) -> tuple[list[list[tuple[int, float]]], dict[str, float]]:
    """Run ``search`` on every query (the first ``warmup`` again, untimed, before); latency percentiles."""
    for i in range(min(warmup, n_queries)):
        search(i)
    hits, seconds = [], []
    for i in range(n_queries):
        start = time.perf_counter()
        hits.append(search(i))
        seconds.append(time.perf_counter() - start)
    return hits, {k: round(v, 4) for k, v in percentiles(seconds).items()}


def top_rows(scores: np.ndarray, k: int, positive: bool = False) -> list[tuple[int, float]]:
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(i), float(scores[i])) for i in order if not positive or scores[i] > 0]


def python_cosine_top_k(rows: list[dict[str, Any]], query: list[float], k: int) -> list[tuple[int, float]]:
    """Cosine of ``query`` with every row's ``embedding``, in plain Python; the k best (row, score)."""
    q_norm = math.sqrt(sum(x * x for x in query))
    scored = []
    for i, row in enumerate(rows):
        vec = row["embedding"]
        dot = sum(a * b for a, b in zip(query, vec, strict=True))
        norm = math.sqrt(sum(b * b for b in vec))
        scored.append((dot / (q_norm * norm) if norm and q_norm else 0.0, i))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [(i, s) for s, i in scored[:k]]


def max_per_row(
    window_rows: np.ndarray, ids: np.ndarray, scores: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """Window hits -> chunk rows at their best window (MaxP), best first."""
    best: dict[int, float] = {}
    for wid, score in zip(ids.tolist(), scores.tolist(), strict=True):
        if wid < 0:
            continue
        row = int(window_rows[wid])
        if row not in best:
            best[row] = score
    return sorted(best.items(), key=lambda t: (-t[1], t[0]))[:k]


# -- the systems -----------------------------------------------------------------------------------


def bm25_systems(
    texts: Sequence[str], queries: Sequence[str], ours: Any, depth: int
) -> dict[str, tuple[str, Search, float]]:
    """name -> (what it is, search, build seconds) for every BM25 system; ours is ``ours``."""
    import bm25s
    import rank_bm25
    import Stemmer

    tokenizer = ours.tokenizer
    systems: dict[str, tuple[str, Search, float]] = {}
    ids = ours.ids()
    row_of = {int(c): r for r, c in enumerate(ids)}
    systems["ours-bm25"] = (
        "BM25IndexManager.search "
        f"({ours.settings.backend}, {ours.settings.variant}, {ours.settings.tokenizer} tokenizer)",
        lambda i: [(row_of[h.id], h.score) for h in ours.search(queries[i], depth)],
        0.0,
    )
    t = time.perf_counter()
    okapi_ws = rank_bm25.BM25Okapi([t.split() for t in texts])
    systems["rank-bm25-whitespace"] = (
        "rank-bm25 BM25Okapi on str.split() (LangChain BM25Retriever's default)",
        lambda i: top_rows(okapi_ws.get_scores(queries[i].split()), depth, positive=True),
        time.perf_counter() - t,
    )
    t = time.perf_counter()
    terms = tokenizer.tokenize_many(texts)
    okapi_ours = rank_bm25.BM25Okapi(terms)
    systems["rank-bm25-our-terms"] = (
        "rank-bm25 BM25Okapi on our tokenizer's terms",
        lambda i: top_rows(okapi_ours.get_scores(tokenizer.tokenize(queries[i])), depth, positive=True),
        time.perf_counter() - t,
    )
    stemmer = Stemmer.Stemmer("english")
    t = time.perf_counter()
    llama = bm25s.BM25()
    llama.index(
        bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )

    def llama_search(i: int) -> list[tuple[int, float]]:
        q = bm25s.tokenize(queries[i], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
        return _bm25s_top(llama, [w for w in q[0] if w in llama.vocab_dict], depth)

    systems["bm25s-own-tokenizer"] = (
        "bm25s with its tokenizer, English stop words and stemmer (LlamaIndex BM25Retriever's default)",
        llama_search,
        time.perf_counter() - t,
    )
    t = time.perf_counter()
    same = bm25s.BM25(k1=ours.settings.k1, b=ours.settings.b, method=ours.settings.variant)
    vocab = {term: j for j, term in enumerate(sorted(set().union(*terms)))}
    same.index(
        ([[vocab[w] for w in doc] for doc in terms], vocab), create_empty_token=False, show_progress=False
    )

    def same_search(i: int) -> list[tuple[int, float]]:
        return _bm25s_top(same, [w for w in tokenizer.tokenize(queries[i]) if w in same.vocab_dict], depth)

    systems["bm25s-our-terms"] = (
        "bm25s on our tokenizer's terms (the index we build)",
        same_search,
        time.perf_counter() - t,
    )
    return systems


def _bm25s_top(model: Any, terms: list[str], depth: int) -> list[tuple[int, float]]:
    if not terms:
        return []
    scores = model.get_scores([model.vocab_dict[w] for w in terms])
    return top_rows(scores, depth, positive=True)


def dense_systems(
    windows: Sequence[np.ndarray], query_vectors: np.ndarray, ours: Any, depth: int, json_dir: Path
) -> dict[str, tuple[str, Search, float]]:
    """name -> (what, search, build seconds) for the dense systems over the same vectors."""
    import faiss

    systems: dict[str, tuple[str, Search, float]] = {}
    ids = np.arange(1, len(windows) + 1, dtype=np.int64)
    pooled = np.vstack([pool_windows(w) for w in windows]).astype(np.float32)
    if ours is not None:
        row_of = {int(c): r for r, c in enumerate(ours.ids())}
        systems["ours-dense-maxp"] = (
            "WindowedVectorIndex.search (MaxP, the default)",
            lambda i: [(row_of[h.id], h.score) for h in ours.search(query_vectors[i], depth)],
            0.0,
        )
    t = time.perf_counter()
    ours_pooled = FaissVectorIndex(pooled.shape[1], "peers")
    ours_pooled.add(ids, pooled)
    systems["ours-dense-pooled"] = (
        "FaissVectorIndex.search (one pooled vector a chunk)",
        lambda i: [(h.id - 1, h.score) for h in ours_pooled.search(query_vectors[i], depth)],
        time.perf_counter() - t,
    )
    t = time.perf_counter()
    flat = faiss.IndexFlatIP(pooled.shape[1])
    flat.add(pooled)
    build = time.perf_counter() - t

    def flat_one(i: int) -> list[tuple[int, float]]:
        with _one_openmp_thread():
            scores, rows = flat.search(query_vectors[i][None, :], depth)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]

    def flat_all(i: int) -> list[tuple[int, float]]:
        scores, rows = flat.search(query_vectors[i][None, :], depth)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]

    systems["faiss-flat-pooled"] = ("faiss IndexFlatIP, pooled vectors, 1 OpenMP thread", flat_one, build)
    systems["faiss-flat-pooled-threads"] = (
        "faiss IndexFlatIP, pooled, Faiss's default threads",
        flat_all,
        build,
    )
    t = time.perf_counter()
    window_rows = np.concatenate([np.full(len(w), r) for r, w in enumerate(windows)])
    flat_w = faiss.IndexFlatIP(pooled.shape[1])
    flat_w.add(np.vstack(windows).astype(np.float32))

    def flat_windows(i: int) -> list[tuple[int, float]]:
        with _one_openmp_thread():
            scores, rows = flat_w.search(query_vectors[i][None, :], min(len(window_rows), depth * 4))
        return max_per_row(window_rows, rows[0], scores[0], depth)

    systems["faiss-flat-windows"] = (
        "faiss IndexFlatIP over the window vectors, best window a chunk (top 4x depth windows)",
        flat_windows,
        time.perf_counter() - t,
    )
    path = json_dir / "embeddings.json"
    path.write_text(
        json.dumps([{"id": int(i), "embedding": v.tolist()} for i, v in zip(ids, pooled, strict=True)])
    )
    t = time.perf_counter()
    rows = json.loads(path.read_text())
    load = time.perf_counter() - t
    qs = [v.tolist() for v in query_vectors]
    systems["python-cosine-json"] = (
        "plain-Python cosine loop over a JSON embedding file (pooled)",
        lambda i: python_cosine_top_k(rows, qs[i], depth),
        load,
    )
    return systems


# -- runs ------------------------------------------------------------------------------------------

COMPARE_TO = {
    "rank-bm25-whitespace": "ours-bm25",
    "rank-bm25-our-terms": "ours-bm25",
    "bm25s-own-tokenizer": "ours-bm25",
    "bm25s-our-terms": "ours-bm25",
    "faiss-flat-pooled": "ours-dense-pooled",
    "faiss-flat-pooled-threads": "ours-dense-pooled",
    "python-cosine-json": "ours-dense-pooled",
    "faiss-flat-windows": "ours-dense-maxp",
}


def measure(
    systems: dict[str, tuple[str, Search, float]],
    n_queries: int,
    warmup: int,
    judge: Callable[[list[list[tuple[int, float]]]], dict[str, float]] | None,
) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for name, (what, search, build) in systems.items():
        hits, latency = timed(search, n_queries, warmup)
        rows[name] = {"what": what, "build_seconds": round(build, 3), "latency_ms": latency}
        if judge is not None:
            rows[name]["metrics"] = judge(hits)
        log(
            f"  {name:28} p50 {latency['p50']:9.2f} ms"
            + (f"  nDCG@10 {rows[name]['metrics']['ndcg@10']:.3f}" if judge else "")
        )
    for name, ref in COMPARE_TO.items():
        if name in rows and ref in rows:
            row, base = rows[name], rows[ref]
            row["compared_to"] = ref
            row["latency_ratio_p50"] = round(
                row["latency_ms"]["p50"] / max(base["latency_ms"]["p50"], 1e-9), 3
            )
            if judge is not None:
                row["ndcg@10_delta"] = round(row["metrics"]["ndcg@10"] - base["metrics"]["ndcg@10"], 4)
    return rows


def run_judged(folder: Path, args: argparse.Namespace, embedder: Any) -> dict[str, Any]:
    from hybrid_rag.evaluation.experiment import doc_run

    base = load_settings(args.config)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    dataset = limit_queries(load_beir(folder), args.max_queries)
    work = Path(args.work) / dataset.name / index_key(base)
    ingest_info = ingest(dataset, base, work, embedder)
    engine, _ = open_engine(base, work, embedder)
    try:
        live = engine.indices.get()
        chunks = list(engine.store.iter_chunks())
        paths = [c.path for c in chunks]
        cached = engine.store.cached_windows(embedder.model_name, [c.sha256 for c in chunks])
        windows = [cached[c.sha256] for c in chunks]
        qids = list(dataset.qrels)
        queries = [dataset.queries[q] for q in qids]
        vectors = embedder.embed_queries(queries)
        log(f"{dataset.name}: {len(chunks)} chunks, {len(qids)} queries")

        def judge(hits: list[list[tuple[int, float]]]) -> dict[str, float]:
            run = {
                q: chunks_to_doc_scores((paths[r], s) for r, s in h) for q, h in zip(qids, hits, strict=True)
            }
            return {k: round(v, 6) for k, v in evaluate(run, dataset.qrels).means.items()}

        systems = bm25_systems([c.text for c in chunks], queries, live.bm25, args.depth)
        with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
            dense_ours = live.dense if hasattr(live.dense, "window_count") else None
            systems.update(dense_systems(windows, vectors, dense_ours, args.depth, Path(tmp)))
            rows = measure(systems, len(qids), args.warmup, judge)
        for mode in ("bm25", "dense"):
            results: list[Any] = []

            def engine_search(
                i: int, mode: str = mode, results: list[Any] = results
            ) -> list[tuple[int, float]]:
                results.append(engine.query(queries[i], top_k=args.depth, mode=mode, features=_OFF))
                return []

            _, latency = timed(engine_search, len(qids), args.warmup)
            runs = {q: doc_run(r) for q, r in zip(qids, results[-len(qids) :], strict=True)}
            rows[f"ours-engine-{mode}"] = {
                "what": f"Engine.query(mode={mode}): query embedding, search, fetch from SQLite",
                "latency_ms": latency,
                "metrics": {k: round(v, 6) for k, v in evaluate(runs, dataset.qrels).means.items()},
            }
            log(f"  ours-engine-{mode:15} p50 {latency['p50']:9.2f} ms")
    finally:
        engine.close()
    return {
        "name": dataset.name,
        "chunks": len(chunks),
        "queries": len(qids),
        "ingest": ingest_info,
        "rows": rows,
    }


_OFF = {"expansion": False, "rerank": False, "mmr": False, "routing": False}


def run_synthetic(n: int, args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_rag.indices.bm25 import BM25IndexManager
    from hybrid_rag.indices.multivector import WindowedVectorIndex
    from studies._scale_legacy import Corpus, default_windows, unit_rows

    settings = load_settings(args.config)
    corpus = Corpus(n)
    texts: list[str] = []
    for ids, lengths in corpus.blocks():
        texts.extend(corpus.texts(ids, lengths))
    queries = corpus.queries(args.synthetic_queries + args.warmup)
    rng = np.random.default_rng(7)
    counts = rng.choice(default_windows(), size=n)
    windows = np.split(unit_rows(rng, int(counts.sum())), np.cumsum(counts)[:-1])
    vectors = unit_rows(rng, len(queries))
    log(f"synthetic: {n} chunks, {int(counts.sum())} windows")
    t = time.perf_counter()
    bm25 = BM25IndexManager(settings.bm25)
    bm25.build(np.arange(1, n + 1, dtype=np.int64), texts)
    bm25_build = time.perf_counter() - t
    t = time.perf_counter()
    maxp = WindowedVectorIndex.create(vectors.shape[1], "peers")
    maxp.add(np.arange(1, n + 1, dtype=np.int64), windows)
    maxp_build = time.perf_counter() - t
    systems = bm25_systems(texts, queries, bm25, args.depth)
    name, (what, search, _) = "ours-bm25", systems["ours-bm25"]
    systems[name] = (what, search, bm25_build)
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        systems.update(dense_systems(windows, vectors, maxp, args.depth, Path(tmp)))
        what, search, _ = systems["ours-dense-maxp"]
        systems["ours-dense-maxp"] = (what, search, maxp_build)
        rows = measure(systems, args.synthetic_queries, args.warmup, None)
    return {"chunks": n, "windows": int(counts.sum()), "queries": args.synthetic_queries, "rows": rows}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS))
    p.add_argument("--only", nargs="*", default=[])
    p.add_argument("--config", help="base settings YAML (default: the built-in defaults)")
    p.add_argument("--fake", action="store_true", help="the hash embedder (plumbing only)")
    p.add_argument("--max-queries", type=int, default=None)
    p.add_argument("--depth", type=int, default=DEPTH, help="results a query from every system")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--synthetic", type=int, default=10_000, help="synthetic chunks (0: none)")
    p.add_argument("--synthetic-queries", type=int, default=20)
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (0: torch's default)")
    p.add_argument("--work", default=str(WORK), help="the suite's stores (%(default)s)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    base = load_settings(args.config)
    embedder = make_embedder(
        base.with_overrides({"embedding.model": "fake"}).embedding if args.fake else base.embedding
    )
    datasets = [
        run_judged(folder, args, embedder) for folder in find_datasets(Path(args.datasets), args.only)
    ]
    synthetic = run_synthetic(args.synthetic, args) if args.synthetic else None
    return {
        "protocol": {
            "depth": args.depth,
            "warmup_queries": args.warmup,
            "repeats": 1,
            "torch_threads": args.torch_threads or "default",
            "embedder": "fake" if args.fake else base.embedding.model,
            "ratio": "latency_ratio_p50 = the peer's p50 / ours (above 1: the peer is slower)",
        },
        "datasets": datasets,
        "synthetic": synthetic,
    }


def size_label(n: int) -> str:
    return (
        f"{n // 1_000_000}M"
        if n >= 1_000_000 and n % 1_000_000 == 0
        else f"{n // 1000}k"
        if n >= 1000
        else str(n)
    )


def render(result: dict[str, Any]) -> str:
    """One table a dataset (and the synthetic corpus): quality, latency, ratio to ours, build time."""
    return "\n".join(peers_section(result)).rstrip()


def peers_section(peers: Mapping[str, Any]) -> list[str]:
    p = peers["protocol"]
    lines = [
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
