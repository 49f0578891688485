"""Backends side by side on the same chunks and vectors: Faiss flat + bm25s (the local default),
Faiss ANN (when ``index.dense_kind`` exists), Chroma (HNSW) + bm25s, and Milvus (milvus-lite in this
process: HNSW, and FLAT for exactness) for both dense and BM25.

* quality: each judged collection is ingested once with the real model (store and embedding cache
  kept in ``--work``); every backend then rebuilds its indices from that store (the same chunks, the
  same cached vectors) and runs every judged query through the whole pipeline: nDCG@10 per mode,
  query latency (the trace's total), rebuild seconds, bytes on disk.
* speed: synthetic chunks at each ``--sizes`` (``_scale_legacy.py``'s corpus: Zipfian words, 500-800 tokens,
  random unit vectors with the measured MaxP windows a chunk), built straight into each index:
  build seconds, an update (1% of chunks removed, 1% added), search p50/p95 (dense k=50, dense with
  a 10% allowed set, exact scores of 50 ids, BM25 k=50), dense recall@10 against the exact scan,
  bytes on disk. The terms are tokenised once and given to every BM25.

Every Milvus figure is milvus-lite. A run of one part (``--skip-quality`` / ``--skip-speed``, or
other ``--sizes``) keeps the other parts of the previous result, each with its own load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, get_args

import numpy as np
from harness import ROOT, read_result

from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset, percentiles
from hybrid_rag.settings import BM25Settings, IndexSettings, MilvusSettings, load_settings
from studies._scale_legacy import (  # RESULTS.md#latency-as-the-corpus-grows's corpus
    DIM,
    Corpus,
    default_windows,
    log,
    set_torch_threads,
    tree_bytes,
    unit_rows,
)

MILVUS = {"index.dense_backend": "milvus", "bm25.backend": "milvus"}
MODES = ("hybrid", "dense", "bm25")
K = 50
LOCAL_DEFAULT = "faiss flat"


def ann_kinds() -> list[str]:
    """The Faiss ANN kinds of ``index.dense_kind`` (issue 13), if this tree has the setting."""
    field = IndexSettings.model_fields.get("dense_kind")
    return [] if field is None else [k for k in get_args(field.annotation) if k not in ("auto", "flat")]


def backends() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {LOCAL_DEFAULT: {}}
    out.update({f"faiss {k}": {"index.dense_kind": k} for k in ann_kinds()})
    out["chroma hnsw"] = {"index.dense_backend": "chroma"}
    out["milvus-lite hnsw"] = MILVUS
    out["milvus-lite flat"] = {**MILVUS, "milvus.index_type": "FLAT"}
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--names", nargs="+", default=["cranfield", "cosqa"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100, help="queries per size in the speed part")
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work" / "backends")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--milvus-uri", help="a Milvus server (http://host:19530) instead of milvus-lite")


def run(args: argparse.Namespace) -> dict[str, Any]:
    threads = set_torch_threads(1)
    previous = read_result("backends") or {}
    result: dict[str, Any] = {k: previous[k] for k in ("quality", "speed") if k in previous}
    result["ann_kinds"] = ann_kinds()
    result["torch_threads"] = threads
    result["milvus"] = args.milvus_uri or "milvus-lite"
    if not args.skip_quality:
        result["quality"] = _part(lambda: quality(args.datasets, args.names, args.work, args.milvus_uri))
    if not args.skip_speed:
        speed = result.setdefault("speed", {})
        for n in args.sizes:
            folder = args.work / f"speed-{n}"
            shutil.rmtree(folder, ignore_errors=True)
            measure = lambda n=n, folder=folder: speed_at(Synthetic(n, args.queries), folder, args.milvus_uri)  # noqa: E731
            speed[str(n)] = _part(measure)
            shutil.rmtree(folder, ignore_errors=True)
    return result


def _part(measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``measure()`` with the load average before it and its wall time (parts may be run apart)."""
    load, start = [round(x, 2) for x in os.getloadavg()], time.perf_counter()
    out = measure()
    return {**out, "load_average": load, "wall_seconds": round(time.perf_counter() - start, 1)}


def quality(datasets: Path, names: Sequence[str], work: Path, milvus_uri: str | None) -> dict[str, Any]:
    from hybrid_rag.engine import Engine
    from hybrid_rag.evaluation.metrics import load_beir
    from hybrid_rag.indices.milvus.client import forget_clients

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
        for backend, overrides in backends().items():
            if milvus_uri and backend.startswith("milvus"):
                overrides = {**overrides, "milvus.uri": milvus_uri}
            engine = Engine(base.with_overrides(overrides))
            try:
                start = time.perf_counter()
                engine.rebuild()
                row: dict[str, Any] = {"rebuild_s": round(time.perf_counter() - start, 2)}
                for mode in MODES:
                    evaluated = evaluate_engine(engine, dataset, mode=mode, warmup=3)
                    latency = evaluated.latency_ms["total"]
                    row[mode] = {
                        "ndcg@10": round(evaluated.report.means["ndcg@10"], 4),
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

    def __init__(self, n: int, queries: int) -> None:
        from hybrid_rag.lang.tokenize import Tokenizer

        log(f"speed: generating {n} chunks")
        self.n = n
        corpus = Corpus(n)
        self.texts = [t for ids, lengths in corpus.blocks() for t in corpus.texts(ids, lengths)]
        self.bm25 = BM25Settings(tokenizer="regex")
        self.tokens = Tokenizer.for_settings(self.bm25).tokenize_many(self.texts)
        rng = np.random.default_rng(7)
        counts = rng.choice(np.asarray(measured_windows()), size=n)
        self.windows = np.split(unit_rows(rng, int(counts.sum())), np.cumsum(counts)[:-1])
        self.ids = np.arange(1, n + 1, dtype=np.int64)
        self.query_texts = corpus.queries(queries)
        self.query_vectors = unit_rows(rng, queries)
        self.allowed = np.sort(rng.choice(self.ids, size=n // 10, replace=False))
        self.update_out = rng.choice(self.ids, size=max(1, n // 100), replace=False)
        self.new_windows = np.split(unit_rows(rng, 3 * len(self.update_out)), len(self.update_out))


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def latency(fn: Callable[[Any], Any], probes: Sequence[Any]) -> dict[str, float]:
    fn(probes[0])  # warm-up
    seconds = [timed(lambda p=p: fn(p)) for p in probes]
    return {k: round(v, 2) for k, v in percentiles(seconds).items() if k != "mean"}


def dense_row(data: Synthetic, index: Any, save: Path, truth: list[set[int]]) -> dict[str, Any]:
    build_s = timed(lambda: (add_all(index, data), index.search(data.query_vectors[0], 1)))
    new_ids = np.arange(data.n + 1, data.n + 1 + len(data.update_out), dtype=np.int64)
    update_s = timed(lambda: (index.remove(data.update_out), index.add(new_ids, data.new_windows)))
    index.remove(new_ids)
    index.add(data.update_out, [data.windows[i - 1] for i in data.update_out])
    if hasattr(index, "flush"):
        index.flush()  # as the engine's build does after an update
    qs = list(data.query_vectors)
    found = [{h.id for h in index.search(q, 10)} for q in qs]
    if not truth:  # the first index is the exact one
        truth.extend(found)
    row = {
        "build_s": round(build_s, 2),
        "update_1pct_s": round(update_s, 2),
        "search_ms": latency(lambda q: index.search(q, K), qs),
        "filtered_search_ms": latency(lambda q: index.search(q, K, data.allowed), qs),
        "score_50_ms": latency(lambda q: index.score(q, data.allowed[:50]), qs),
        "recall@10": round(float(np.mean([len(f & t) / 10 for f, t in zip(found, truth, strict=True)])), 4),
    }
    index.save(save)
    row["disk_bytes"] = tree_bytes(save)
    return row


def keyword_row(data: Synthetic, index: Any, save: Path, rebuild: bool) -> dict[str, Any]:
    build_s = timed(lambda: (add_all(index, data), index.search(data.query_texts[0], 1)))
    keep = np.flatnonzero(~np.isin(data.ids, data.update_out))

    def update() -> None:  # bm25s has no incremental update: the builder rebuilds it whole
        if rebuild:
            index.build(data.ids[keep], [data.texts[i] for i in keep], tokens=[data.tokens[i] for i in keep])
        else:
            index.remove(data.update_out)

    row = {
        "build_s": round(build_s, 2),
        "update_1pct_s": round(timed(update), 2),
        "search_ms": latency(lambda q: index.search(q, K), data.query_texts),
        "score_50_ms": latency(lambda q: index.score(q, data.allowed[:50]), data.query_texts),
    }
    index.save(save)
    row["disk_bytes"] = tree_bytes(save)
    return row


class _Dims:
    """What ``live.new_dense`` reads of an embedder."""

    model_name, dimension = "synthetic", DIM


def speed_at(data: Synthetic, folder: Path, milvus_uri: str | None = None) -> dict[str, Any]:
    from hybrid_rag.indices.bm25 import BM25IndexManager
    from hybrid_rag.indices.live import new_dense
    from hybrid_rag.indices.milvus.bm25 import MilvusKeywordIndex
    from hybrid_rag.indices.milvus.client import connect, forget_clients
    from hybrid_rag.indices.milvus.dense import MilvusVectorIndex

    truth: list[set[int]] = []
    row: dict[str, Any] = {"windows_per_chunk_mean": round(float(np.mean([len(w) for w in data.windows])), 3)}
    local = {"dense faiss flat": {}, **{f"dense faiss {k}": {"dense_kind": k} for k in ann_kinds()}}
    local["dense chroma hnsw"] = {"dense_backend": "chroma"}
    for name, overrides in local.items():
        log(f"speed {data.n}: {name}")
        kind = overrides.get("dense_kind", "flat")
        index = new_dense(IndexSettings(**overrides), _Dims(), kind)  # type: ignore[arg-type,call-arg]
        row[name] = dense_row(data, index, folder / name.replace(" ", "-"), truth)
        del index
    settings = MilvusSettings(uri=milvus_uri) if milvus_uri else MilvusSettings()
    client = connect(settings, folder)  # milvus-lite in folder/milvus.db, or the server
    log(f"speed {data.n}: milvus-lite")
    dense = MilvusVectorIndex.create(client, "dense", settings, dimension=DIM, model_name="s", scoring="maxp")
    row["dense milvus-lite hnsw"] = dense_row(data, dense, folder / "milvus-dense", truth)
    log(f"speed {data.n}: bm25")
    row["bm25 bm25s"] = keyword_row(data, BM25IndexManager(data.bm25), folder / "bm25", rebuild=True)
    keyword = MilvusKeywordIndex.create(client, "bench_bm25", settings, data.bm25)
    row["bm25 milvus-lite"] = keyword_row(data, keyword, folder / "milvus-bm25", rebuild=False)
    forget_clients()
    row["milvus-lite disk_bytes"] = tree_bytes(folder / "milvus.db")  # both collections: data lives here
    return row


def add_all(index: Any, data: Synthetic, batch: int = 5000) -> None:
    """Every synthetic chunk into ``index``, a batch at a time, flushed once (Milvus)."""
    keyword = hasattr(index, "tokenizer")
    if keyword and not hasattr(index, "flush"):  # bm25s: one build
        index.build(data.ids, data.texts, tokens=data.tokens)
        return
    for start in range(0, data.n, batch):
        part = slice(start, start + batch)
        if keyword:
            index.add(data.ids[part], data.texts[part], tokens=data.tokens[part], flush=False)
        else:
            index.add(data.ids[part], data.windows[part])
    if hasattr(index, "flush"):
        index.flush()


def measured_windows() -> list[int]:
    """Windows per chunk as the real model gave them on scale.py's ingest sample, else estimated."""
    try:
        scale = json.loads((ROOT / "benchmarks" / "results" / "scale.json").read_text())
        return list(scale["ingest"]["windows_per_chunk"]["values"])
    except (OSError, KeyError, json.JSONDecodeError):
        return default_windows()


from studies._backends_render import render  # noqa: E402,F401  (the harness calls backends.render)
