"""Scale on one machine: the default pipeline at 10k-1M chunks, exact vs approximate dense search,
the BM25 update cost of a one-file change (1k-1M), ANN recall, and ANN quality on judged data.

Stores are built by the engine's own ingest (``_scale_corpus.py``: synthetic Zipfian text in short
chunks of about 60 tokens, fake-embedder vectors) and kept in ``benchmarks/work/scale/<N>``. Each
measurement runs in its own process, so its peak RSS is its own:

* ``latency`` (a size, a dense kind): a full ``rebuild`` of that kind (timed by stage), then per
  query ``Engine.query`` end to end with expansion on and off, the dense search alone, BM25 alone,
  and recall@10 of the dense search against exact search over the same vectors;
* ``update`` (a size): one changed file ingested (``--updates`` times, different files), the index
  build's seconds by stage and the BM25 path taken (a delta segment), against a full build;
* ``quality``: cranfield and cosqa with the real model, dense and hybrid nDCG@10 per kind.

    flock /tmp/hybrid-rag-bench.lock .venv/bin/python benchmarks/harness.py run scale
    .venv/bin/python benchmarks/harness.py run scale --sizes 10000 --update-sizes 1000 --queries 20
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _scale_corpus as corpus_mod
from _scale_legacy import log
from _scale_render import plot, render  # noqa: F401  (render: the harness's entry point)

SIZES = (10_000, 100_000, 1_000_000)
UPDATE_SIZES = (1_000, 10_000, 20_000, 100_000, 1_000_000)
KINDS = ("flat", "ivf", "hnsw")
DATASETS = ("cranfield", "cosqa")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", nargs="*", type=int, default=list(SIZES), help="latency sizes")
    p.add_argument("--update-sizes", nargs="*", type=int, default=list(UPDATE_SIZES))
    p.add_argument("--kinds", nargs="*", default=list(KINDS), choices=KINDS)
    p.add_argument("--hnsw-max", type=int, default=100_000, help="largest size given an HNSW build")
    p.add_argument("--queries", type=int, default=50, help="timed queries a size and kind")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--updates", type=int, default=5, help="one-file updates a size (median reported)")
    p.add_argument("--datasets", nargs="*", default=list(DATASETS), help="judged sets for ANN quality")
    p.add_argument("--data-root", default=str(corpus_mod.ROOT.parent / "shared" / "datasets"))
    p.add_argument(
        "--quality-from", help="JSON list of quality results measured apart (`scale.py quality OUT ARGS`)"
    )
    p.add_argument("--work", default=str(corpus_mod.WORK))
    p.add_argument("--wait-for-build", action="store_true", help="wait for a store being built apart")


def child(what: str, args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """Run one measurement in a fresh process; its JSON, or {"error": ...}."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    command = [sys.executable, __file__, what, str(out), json.dumps({**vars(args), **extra})]
    start = time.perf_counter()
    done = subprocess.run(command, check=False)
    try:
        if done.returncode != 0:
            return {"error": f"child {what} {extra} exited with {done.returncode}", **extra}
        result = json.loads(out.read_text())
        result["child_wall_seconds"] = round(time.perf_counter() - start, 1)
        return result
    finally:
        out.unlink(missing_ok=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work)
    result: dict[str, Any] = {
        "protocol": {
            "queries": args.queries,
            "warmup": args.warmup,
            "updates": args.updates,
            "corpus": corpus_mod.CORPUS_FORMAT,
            "chunk_words": corpus_mod.LINE_WORDS,
            "overrides": corpus_mod.OVERRIDES,
            "hnsw_max": args.hnsw_max,
        },
        "stores": [],
        "latency": [],
        "updates": [],
        "quality": [],
    }
    for n in sorted(set(args.sizes) | set(args.update_sizes)):
        record = corpus_mod.read_build(work, n)
        while record is None and args.wait_for_build and corpus_mod.store_dir(work, n).exists():
            log(f"waiting for the store of {n} chunks another process is building")
            time.sleep(60)
            record = corpus_mod.read_build(work, n)
        if record is None:
            log(f"building a store of {n} chunks")
            record = child("build", args, size=n)
        result["stores"].append(record)
        for kind in args.kinds if n in args.sizes else ():
            if kind == "hnsw" and n > args.hnsw_max:
                continue
            log(f"latency: {n} chunks, {kind}")
            result["latency"].append(child("latency", args, size=n, kind=kind))
        if n in args.update_sizes:
            log(f"update: {n} chunks")
            result["updates"].append(child("update", args, size=n))
    for name in args.datasets:
        log(f"quality: {name}")
        result["quality"].append(child("quality", args, dataset=name))
    if args.quality_from:  # not timed: measured in a separate process, possibly at another time
        result["quality"] += json.loads(Path(args.quality_from).read_text())
    plot(result, corpus_mod.ROOT / "benchmarks" / "plots")
    return result


# -- children ----------------------------------------------------------------------------------


def _engine(n: int, work: Path, kind: str) -> Any:
    from hybrid_rag.engine import Engine

    extra = {"paths.indices_path": f"indices-{kind}", "index.dense_kind": kind}
    return Engine(corpus_mod.settings_for(corpus_mod.store_dir(work, n), extra))


def _adopt_ingest_version(n: int, work: Path, kind: str) -> dict[str, Any] | None:
    """Use the index the store's own ingest built (``indices/``) as this kind's, when it is that
    kind and this kind has none yet: a million-chunk build is not paid twice. Its build record."""
    import os

    from hybrid_rag.indices.versions import IndexVersions

    directory = corpus_mod.store_dir(work, n)
    source, target = directory / "indices", directory / f"indices-{kind}"
    versions = IndexVersions(source)
    current = versions.current() if source.is_dir() else None
    if target.exists() or current is None:
        return None
    if versions.manifest(current).get("params", {}).get("dense_kind", "flat") != kind:
        return None
    os.rename(source, target)
    seconds = (corpus_mod.read_build(work, n) or {}).get("seconds", {})
    return {
        "from_ingest": True,
        "seconds": {"index": seconds.get("index", 0.0)},
        "total_seconds": seconds.get("index", 0.0),
    }


def _timed_rebuild(engine: Any) -> dict[str, Any]:
    start = time.perf_counter()
    report = engine.rebuild()
    return {
        "seconds": {k: round(v, 3) for k, v in report.seconds.items()},
        "total_seconds": round(time.perf_counter() - start, 3),
    }


def _ms(values: list[float]) -> dict[str, float]:
    from hybrid_rag.evaluation.experiment import percentiles

    return {k: round(v, 3) for k, v in percentiles(values).items()}  # seconds in, ms out


def measure_latency(n: int, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_rag.indices.multivector import WindowedVectorIndex

    work = Path(args.work)
    reused = _adopt_ingest_version(n, work, kind)
    engine = _engine(n, work, kind)
    out: dict[str, Any] = {"size": n, "kind": kind, "chunks": engine.store.chunk_count()}
    try:
        if reused is not None and not engine.ingestor.builder.is_stale():
            log(f"{n} {kind}: the version the store's ingest built")
            out["build"] = reused
        else:
            log(f"{n} {kind}: full build")
            out["build"] = _timed_rebuild(engine)
        live = engine.indices.get()
        out["dense_params"] = {k: v for k, v in live.manifest["params"].items() if k in ("dense_kind", "ann")}
        record = corpus_mod.read_build(work, n) or {}
        queries = corpus_mod.Corpus().queries(args.warmup + args.queries, record.get("documents", 1))
        for expansion in (True, False):
            totals: list[float] = []
            stages: dict[str, list[float]] = {}
            for i, q in enumerate(queries):
                start = time.perf_counter()
                res = engine.query(q, top_k=10, features={"expansion": expansion})
                if i >= args.warmup:
                    totals.append(time.perf_counter() - start)
                    for t in res.trace.timings:
                        stages.setdefault(t.stage, []).append(t.seconds)
            label = "expansion_on" if expansion else "expansion_off"
            per_stage = {s: _ms(v)["p50"] for s, v in stages.items()}
            out[label] = {"end_to_end_ms": _ms(totals), "stages_p50_ms": per_stage}
            log(f"{n} {kind} {label}: p50 {out[label]['end_to_end_ms']['p50']:.1f} ms")
        vectors = engine.embedder.embed_queries(queries)
        dense = live.dense
        inner = dense.inner if isinstance(dense, WindowedVectorIndex) else dense
        exact = getattr(inner, "flat", None)
        if exact is not None:
            exact = WindowedVectorIndex(exact) if isinstance(dense, WindowedVectorIndex) else exact
        k = engine.settings.retrieval.dense_top_k
        dense_s, exact_s, bm25_s, recall = [], [], [], []
        for i, (q, v) in enumerate(zip(queries, vectors, strict=True)):
            t = time.perf_counter()
            hits = dense.search(v, k)
            t1 = time.perf_counter()
            live.bm25.search(q, engine.settings.retrieval.bm25_top_k)
            t2 = time.perf_counter()
            if exact is not None:
                truth = exact.search(v, 10)
                exact_s.append(time.perf_counter() - t2)
                recall.append(len({h.id for h in hits[:10]} & {h.id for h in truth}) / max(len(truth), 1))
            if i >= args.warmup:
                dense_s.append(t1 - t)
                bm25_s.append(t2 - t1)
        out["dense_search_ms"] = _ms(dense_s)
        out["bm25_search_ms"] = _ms(bm25_s)
        if recall:
            out["exact_search_ms"] = _ms(exact_s[args.warmup :])
            out["recall_at_10"] = round(float(np.mean(recall)), 4)
    finally:
        engine.close()
    out["peak_rss_bytes"] = corpus_mod.peak_rss_bytes()
    folder = work / str(n) / f"indices-{kind}"
    out["index_bytes"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return out


def measure_updates(n: int, args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_rag.ingest.loaders import load_text

    work = Path(args.work)
    engine = _engine(n, work, "flat")
    out: dict[str, Any] = {"size": n, "chunks": engine.store.chunk_count()}
    try:
        stale = engine.indices.versions.current() is None or engine.ingestor.builder.is_stale()
        if stale or getattr(args, "full_first", False):
            log(f"{n}: full build first")
            out["full_build"] = _timed_rebuild(engine)
        corpus = corpus_mod.Corpus()
        documents = (corpus_mod.read_build(work, n) or {}).get("documents", 1)
        runs = []
        for u in range(args.updates):
            j = (documents * (u + 1)) // (args.updates + 1)
            path, _ = next(corpus.documents(j, j + 1))
            changed = load_text(path, corpus.document(10_000_000 + 97 * j + int(time.time()) % 10_000))
            start = time.perf_counter()
            report = engine.ingestor.ingest_files([changed], collection="scale")
            wall = time.perf_counter() - start
            build = report.build
            runs.append(
                {
                    "wall_seconds": round(wall, 3),
                    "build_seconds": {k: round(v, 3) for k, v in build.seconds.items()},
                    "build_total_seconds": round(sum(build.seconds.values()), 3),
                    "bm25_update": build.bm25_update,
                    "added": build.added,
                    "removed": build.removed,
                }
            )
            log(f"{n}: update {u}: bm25 {build.seconds.get('bm25', 0):.3f} s ({build.bm25_update})")
        out["runs"] = runs
        segments = engine.indices.get().bm25.segmented
        out["segments_after"] = len(segments.segments) if segments is not None else None
    finally:
        engine.close()
    out["peak_rss_bytes"] = corpus_mod.peak_rss_bytes()
    return out


def measure_quality(name: str, args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_rag.engine import Engine
    from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
    from hybrid_rag.evaluation.metrics import load_beir
    from hybrid_rag.settings import Settings

    dataset = load_beir(Path(args.data_root) / name)
    root = Path(args.work).parent / "scale-quality" / name
    out: dict[str, Any] = {"dataset": name, "kinds": {}}
    for kind in KINDS:
        settings = Settings().with_overrides(
            {"paths.data_dir": str(root), "paths.indices_path": f"indices-{kind}", "index.dense_kind": kind}
        )
        engine = Engine(settings)
        try:
            if kind == "flat":
                out["ingest_seconds"] = round(ingest_dataset(engine, dataset), 1)
            engine.rebuild()
            params = engine.indices.get().manifest["params"]
            row: dict[str, Any] = {"ann": params.get("ann"), "chunks": engine.store.chunk_count()}
            for mode in ("dense", "hybrid"):
                res = evaluate_engine(engine, dataset, mode=mode, warmup=0)
                row[mode] = {m: round(v, 4) for m, v in res.report.means.items()}
            out["kinds"][kind] = row
            log(f"quality {name} {kind}: {row}")
        finally:
            engine.close()
    return out


if __name__ == "__main__":
    what, target, raw = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    ns = argparse.Namespace(**raw)
    if what == "build":
        answer = corpus_mod.build_store(Path(ns.work), ns.size)
    elif what == "latency":
        answer = measure_latency(ns.size, ns.kind, ns)
    elif what == "update":
        answer = measure_updates(ns.size, ns)
    else:
        answer = measure_quality(ns.dataset, ns)
    target.write_text(json.dumps(answer))
