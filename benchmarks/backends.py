"""Backends side by side on the same chunks and vectors: Faiss flat + bm25s (the local default),
Chroma (HNSW) + bm25s, and Milvus (milvus-lite, in this process: HNSW, and FLAT for exactness).

* ``quality``: each judged collection is ingested once with the real model (the store and its
  embedding cache are kept in ``--work``), then every backend rebuilds its indices from that store
  (the same chunks, the same cached vectors) and runs every judged query through the whole
  pipeline: nDCG@10 per mode, query latency (the trace's total), rebuild seconds, bytes on disk.
* ``speed``: synthetic chunks at each ``--sizes`` (``scale.py``'s corpus: Zipfian words, 500-800
  tokens, random unit vectors with the measured MaxP windows per chunk), built straight into each
  index class: build seconds, an update (1% of chunks removed, 1% added), search p50/p95 (dense
  k=50, dense with a 10% allowed set, dense exact scores of 50 ids, BM25 k=50), dense recall@10
  against the exact scan, bytes on disk. The terms are tokenised once and given to every BM25.

Every Milvus figure here is milvus-lite: a pure-Python engine in this process, with BM25
statistics per segment; a Milvus server is another program (C++, its own cores, segments sealed
and indexed in the background, global BM25 statistics), so its latencies are not these.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/backends.py --datasets ../shared/datasets
    .venv/bin/python benchmarks/backends.py --skip-quality --sizes 10000 --queries 30
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from scale import DIM, Corpus, default_windows, log, set_torch_threads, tree_bytes, unit_rows  # noqa: E402

from hybrid_rag.evaluation.bench import git_info, machine_info  # noqa: E402
from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset, percentiles  # noqa: E402
from hybrid_rag.settings import BM25Settings, MilvusSettings, load_settings  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "backends.json"
MILVUS = {"index.dense_backend": "milvus", "bm25.backend": "milvus"}
BACKENDS = {
    "faiss": {},
    "chroma": {"index.dense_backend": "chroma"},
    "milvus-lite hnsw": MILVUS,
    "milvus-lite flat": {**MILVUS, "milvus.index_type": "FLAT"},
}
MODES = ("hybrid", "dense", "bm25")
K = 50


def quality(datasets: Path, names: Sequence[str], work: Path, milvus_uri: str | None) -> dict[str, Any]:
    from hybrid_rag.engine import Engine
    from hybrid_rag.evaluation.metrics import load_beir
    from hybrid_rag.indices.milvus_client import forget_clients

    out: dict[str, Any] = {}
    for name in names:
        dataset = load_beir(datasets / name)
        base = load_settings(None, environ={}).with_overrides(
            {"paths.data_dir": str(work / name), "paths.keep_versions": 1}
        )
        engine = Engine(base)
        if engine.store.chunk_count() == 0:
            log(f"{name}: ingesting {len(dataset.corpus)} documents with the real model")
            ingest_dataset(engine, dataset)
        engine.close()
        out[name] = {}
        for backend, overrides in BACKENDS.items():
            if milvus_uri and backend.startswith("milvus"):
                overrides = {**overrides, "milvus.uri": milvus_uri}
            engine = Engine(base.with_overrides(overrides))
            try:
                start = time.perf_counter()
                engine.rebuild()
                row: dict[str, Any] = {"rebuild_seconds": round(time.perf_counter() - start, 2)}
                for mode in MODES:
                    result = evaluate_engine(engine, dataset, mode=mode, warmup=3)
                    latency = result.latency_ms["total"]
                    row[mode] = {
                        "ndcg@10": round(result.report.means["ndcg@10"], 4),
                        "ms_p50": round(latency["p50"], 1),
                        "ms_p95": round(latency["p95"], 1),
                    }
                stats = engine.stats().bytes_on_disk
                row["index_bytes"] = sum(v for k, v in stats.items() if k != "store")
                log(f"{name} {backend}: {json.dumps(row)}")
                out[name][backend] = row
            finally:
                engine.close()
                forget_clients()
    return out


class Synthetic:
    """Chunks 1..n: texts (tokenised once), MaxP window matrices, and queries."""

    def __init__(self, n: int, windows: Sequence[int], queries: int) -> None:
        from hybrid_rag.indices.tokenize import Tokenizer

        self.n = n
        corpus = Corpus(n)
        self.texts = [t for ids, lengths in corpus.blocks() for t in corpus.texts(ids, lengths)]
        self.bm25 = BM25Settings(tokenizer="regex")
        self.tokens = Tokenizer.for_settings(self.bm25).tokenize_many(self.texts)
        rng = np.random.default_rng(7)
        counts = rng.choice(np.asarray(windows), size=n)
        rows = unit_rows(rng, int(counts.sum()))
        self.windows = np.split(rows, np.cumsum(counts)[:-1])
        self.ids = np.arange(1, n + 1, dtype=np.int64)
        self.query_texts = corpus.queries(queries)
        self.query_vectors = unit_rows(rng, queries)
        self.allowed = np.sort(rng.choice(self.ids, size=n // 10, replace=False))
        self.update_out = rng.choice(self.ids, size=max(1, n // 100), replace=False)
        self.new_windows = np.split(unit_rows(rng, 3 * len(self.update_out)), len(self.update_out))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def latency(fn: Callable[[Any], Any], probes: Sequence[Any]) -> dict[str, float]:
    fn(probes[0])  # warm-up
    seconds = [timed(lambda p=p: fn(p))[1] for p in probes]
    return {k: round(v, 2) for k, v in percentiles(seconds).items() if k != "mean"}


def dense_row(
    data: Synthetic, index: Any, build: Callable[[], None], save: Path, truth: list[set[int]]
) -> dict:
    _, build_s = timed(lambda: (build(), index.search(data.query_vectors[0], 1)))  # a lazy index is built too
    new_ids = np.arange(data.n + 1, data.n + 1 + len(data.update_out), dtype=np.int64)

    def update() -> None:
        index.remove(data.update_out)
        index.add(new_ids, data.new_windows)

    _, update_s = timed(update)
    index.remove(new_ids)
    index.add(data.update_out, [data.windows[i - 1] for i in data.update_out])
    if hasattr(index, "flush"):
        index.flush()  # as the engine's build does after an update
    qs = list(data.query_vectors)
    found = [{h.id for h in index.search(q, 10)} for q in qs]
    row = {
        "build_s": round(build_s, 2),
        "update_1pct_s": round(update_s, 2),
        "search_ms": latency(lambda q: index.search(q, K), qs),
        "filtered_search_ms": latency(lambda q: index.search(q, K, data.allowed), qs),
        "score_50_ms": latency(lambda q: index.score(q, data.allowed[:50]), qs),
        "recall@10": round(float(np.mean([len(f & t) / 10 for f, t in zip(found, truth, strict=True)])), 4),
    }
    index.save(save)
    return row


def keyword_row(data: Synthetic, index: Any, build: Callable[[], None], save: Path, rebuild: bool) -> dict:
    _, build_s = timed(lambda: (build(), index.search(data.query_texts[0], 1)))
    keep = ~np.isin(data.ids, data.update_out)

    def update() -> None:  # bm25s has no incremental update: the builder rebuilds it whole
        if rebuild:
            index.build(data.ids[keep], [data.texts[i] for i in np.flatnonzero(keep)],
                        tokens=[data.tokens[i] for i in np.flatnonzero(keep)])  # fmt: skip
        else:
            index.remove(data.update_out)

    _, update_s = timed(update)
    row = {
        "build_s": round(build_s, 2),
        "update_1pct_s": round(update_s, 2),
        "search_ms": latency(lambda q: index.search(q, K), data.query_texts),
        "score_50_ms": latency(lambda q: index.score(q, data.allowed[:50]), data.query_texts),
    }
    index.save(save)
    return row


def speed(sizes: Sequence[int], queries: int, work: Path, milvus_uri: str | None) -> dict[str, Any]:
    windows = _measured_windows()
    out: dict[str, Any] = {"windows_per_chunk_mean": round(float(np.mean(windows)), 3)}
    for n in sizes:
        log(f"speed: {n} chunks")
        folder = work / f"speed-{n}"
        shutil.rmtree(folder, ignore_errors=True)
        out[str(n)] = row = speed_at(Synthetic(n, windows, queries), folder, milvus_uri)
        log(f"speed {n}: {json.dumps(row)}")
    return out


def speed_at(data: Synthetic, folder: Path, milvus_uri: str | None) -> dict[str, Any]:
    from hybrid_rag.indices.bm25 import BM25IndexManager
    from hybrid_rag.indices.chroma import ChromaVectorIndex
    from hybrid_rag.indices.milvus import MilvusVectorIndex
    from hybrid_rag.indices.milvus_bm25 import MilvusKeywordIndex
    from hybrid_rag.indices.milvus_client import connect, forget_clients
    from hybrid_rag.indices.multivector import WindowedVectorIndex

    truth: list[set[int]] = []
    row: dict[str, Any] = {}
    flat = WindowedVectorIndex.create(DIM, "synthetic")
    row["dense faiss flat"] = dense_row(
        data, flat, partial(_add_all, flat, data, truth), folder / "faiss", truth
    )
    chroma = WindowedVectorIndex.create(DIM, "synthetic", ChromaVectorIndex)
    row["dense chroma hnsw"] = dense_row(
        data, chroma, partial(_add_all, chroma, data), folder / "chroma", truth
    )
    del flat, chroma
    settings = MilvusSettings(uri=milvus_uri) if milvus_uri else MilvusSettings()
    client = connect(settings, folder)  # milvus-lite in folder/milvus.db, or the server
    milvus = MilvusVectorIndex.create(
        client, "dense", settings, dimension=DIM, model_name="s", scoring="maxp"
    )
    build = partial(_add_all, milvus, data)
    row["dense milvus-lite hnsw"] = dense_row(data, milvus, build, folder / "milvus-dense", truth)
    bm25 = BM25IndexManager(data.bm25)
    build = partial(bm25.build, data.ids, data.texts, tokens=data.tokens)
    row["bm25 bm25s"] = keyword_row(data, bm25, build, folder / "bm25", rebuild=True)
    keyword = MilvusKeywordIndex.create(client, "bench_bm25", settings, data.bm25)
    build = partial(_add_all, keyword, data)
    row["bm25 milvus-lite"] = keyword_row(data, keyword, build, folder / "milvus-bm25", rebuild=False)
    for key, path in (("dense faiss flat", "faiss"), ("dense chroma hnsw", "chroma"), ("bm25 bm25s", "bm25")):
        row[key]["disk_bytes"] = tree_bytes(folder / path)
    forget_clients()
    row["milvus-lite disk_bytes (dense + bm25)"] = tree_bytes(folder / "milvus.db")
    return row


def _add_all(index: Any, data: Synthetic, truth: list[set[int]] | None = None, batch: int = 5000) -> None:
    """Every synthetic chunk into ``index``, a batch at a time, flushed once (Milvus); the exact
    top 10 of each query into ``truth`` when given."""
    keyword = hasattr(index, "tokenizer")
    for start in range(0, data.n, batch):
        part = slice(start, start + batch)
        if keyword:
            index.add(data.ids[part], data.texts[part], tokens=data.tokens[part], flush=False)
        else:
            index.add(data.ids[part], data.windows[part])
    if hasattr(index, "flush"):
        index.flush()
    if truth is not None:
        truth.extend({h.id for h in index.search(q, 10)} for q in data.query_vectors)


def _measured_windows() -> list[int]:
    """Windows per chunk as the real model gave them on scale.py's ingest sample, else estimated."""
    try:
        scale = json.loads((ROOT / "benchmarks" / "results" / "scale.json").read_text())
        return list(scale["ingest"]["windows_per_chunk"]["values"])
    except (OSError, KeyError, json.JSONDecodeError):
        return default_windows()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--names", nargs="+", default=["cranfield", "cosqa"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100, help="queries per size in the speed part")
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work" / "backends")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--milvus-uri", help="a Milvus server (http://host:19530) instead of milvus-lite")
    args = parser.parse_args(argv)
    threads = set_torch_threads(1)
    start = time.time()
    # a run of one part keeps the other part of an earlier run in the same file
    result: dict[str, Any] = json.loads(args.out.read_text()) if args.out.is_file() else {}
    run = {
        "command": "python benchmarks/backends.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git": git_info(ROOT),
        "machine": machine_info(),
        "torch_threads": threads,
    }
    result["format"] = "hybrid-rag-backends/1"
    result["milvus"] = args.milvus_uri or "milvus-lite (pure Python, in this process); not a Milvus server"
    if not args.skip_quality:
        result["quality"] = quality(args.datasets, args.names, args.work, args.milvus_uri)
        result["quality_run"] = {**run, "wall_seconds": round(time.time() - start, 1)}
    if not args.skip_speed:
        start = time.time()
        result.setdefault("speed", {}).update(speed(args.sizes, args.queries, args.work, args.milvus_uri))
        result.setdefault("speed_runs", {}).update(
            {str(n): {**run, "wall_seconds": round(time.time() - start, 1)} for n in args.sizes}
        )
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
