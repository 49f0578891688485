"""The compat classes against the loops they replace: same results, how much faster, what memory.

Writes a synthetic ``embeddings.json`` (for ``DocumentRetriever``) and ``embeddings.jsonl`` (for
``EmbeddingStore``) of ``--rows`` random unit vectors of dimension ``--dim`` (seeded, rounded to
6 decimals as a JSON writer would leave them), then searches both with ``--queries`` query vectors
(a stored row plus noise, so each query has a clear best match) four ways, each in its own process
so that its memory is its own:

* ``doc-ours`` / ``store-ours``: ``hybrid_rag.compat`` (one numpy matrix product a query);
* ``doc-original`` / ``store-original``: the originals' loops, rewritten here as they were
  documented: ``DocumentRetriever`` took a per-row numpy cosine (``np.array`` of both lists,
  ``np.dot``, two norms) in a Python loop, then a stable sort; ``EmbeddingStore`` filtered the rows
  with a vector on every call, took a pure-Python cosine (``sum`` over ``zip``) per row, sorted,
  built a result dict for every row, then cut ``[:k]``.

Each query's ids must be the same in the same order and every score within 1e-6, or the run
fails. Reports load time, search p50/p95 and the speed ratio of the p50s, and resident memory
held after loading.

    .venv/bin/python benchmarks/harness.py run compat_search                  # 100k rows, 20 queries
    .venv/bin/python benchmarks/harness.py run compat_search --out /tmp/c.json --rows 5000   # a quick look
    .venv/bin/python benchmarks/harness.py report compat_search     # RESULTS.md#drop-in-classes's table
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work"
SEED = 20240601
TOLERANCE = 1e-6
CHILDREN = ("doc-ours", "doc-original", "store-ours", "store-original")


def rss_bytes() -> int:
    """Resident memory now, after handing freed heap pages back to the system (glibc), so that
    what a loader parsed and dropped does not count as held."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# -- the originals, as documented -------------------------------------------------------------


def original_document_search(chunks: list[dict], query: list[float], k: int) -> list[tuple[str, float]]:
    """DocumentRetriever.search before: a numpy cosine per chunk in a Python loop, stable sort."""
    similarities = []
    for idx, chunk in enumerate(chunks):
        vec1, vec2 = np.array(query), np.array(chunk["embedding"])
        dot, norm1, norm2 = np.dot(vec1, vec2), np.linalg.norm(vec1), np.linalg.norm(vec2)
        similarities.append((idx, 0.0 if norm1 == 0 or norm2 == 0 else float(dot / (norm1 * norm2))))
    similarities.sort(key=lambda x: x[1], reverse=True)
    return [(chunks[idx]["chunk_id"], score) for idx, score in similarities[:k]]


def _has_vec(row: dict) -> bool:
    v = row.get("embedding")
    return isinstance(v, list) and len(v) > 0 and all(isinstance(x, (int, float)) for x in v)


def _cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    return (dot / (na * nb)) if (na > 0 and nb > 0) else 0.0


def original_store_search(rows: list[dict], query: list[float], k: int) -> list[tuple[str, float]]:
    """EmbeddingStore.search_by_vector before: filter, pure-Python cosine per row, sort, dicts, cut."""
    scored = [(_cos(query, r["embedding"]), r) for r in rows if _has_vec(r)]
    scored.sort(key=lambda t: t[0], reverse=True)
    ranked = [dict(score=s, **r) for s, r in scored]
    return [(r["id"], r["score"]) for r in ranked[:k]]


# -- one measured process ----------------------------------------------------------------------


def run_child(kind: str, work: Path, k: int) -> dict[str, Any]:
    queries = np.load(work / "queries.npy")
    from hybrid_rag.compat import DocumentRetriever, EmbeddingStore  # imported before the baseline

    gc.collect()
    baseline = rss_bytes()
    started = time.perf_counter()
    timings: dict[str, float] = {}
    if kind == "doc-ours":

        class Generator:
            def generate(self, text: str) -> list[float]:
                return queries[int(text)].tolist()

        retriever = DocumentRetriever(work / "embeddings.json", Generator())
        retriever.load_index()
        timings["load_s"] = time.perf_counter() - started

        def search(i: int) -> list[tuple[Any, float]]:
            return [(r.chunk_id, r.similarity_score) for r in retriever.search(str(i), top_k=k)]

    elif kind == "store-ours":
        store = EmbeddingStore(work / "embeddings.jsonl")
        timings["load_s"] = time.perf_counter() - started
        first = time.perf_counter()
        store.search_by_vector(queries[0].tolist(), k=k)  # builds the vector matrix, once
        timings["first_search_s"] = time.perf_counter() - first

        def search(i: int) -> list[tuple[Any, float]]:
            return [(r["id"], r["score"]) for r in store.search_by_vector(queries[i].tolist(), k=k)]

    elif kind == "doc-original":
        with (work / "embeddings.json").open(encoding="utf-8") as handle:
            chunks = json.load(handle)["chunks"]
        timings["load_s"] = time.perf_counter() - started

        def search(i: int) -> list[tuple[Any, float]]:
            return original_document_search(chunks, queries[i].tolist(), k)

    else:
        with (work / "embeddings.jsonl").open(encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle]
        timings["load_s"] = time.perf_counter() - started

        def search(i: int) -> list[tuple[Any, float]]:
            return original_store_search(rows, queries[i].tolist(), k)

    gc.collect()
    held = rss_bytes() - baseline
    results, seconds = [], []
    for i in range(len(queries)):
        t = time.perf_counter()
        results.append(search(i))
        seconds.append(time.perf_counter() - t)
    return {
        **timings,
        "search_seconds": seconds,
        "results": results,
        "rss_held_bytes": held,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


# -- the parent --------------------------------------------------------------------------------


def write_files(work: Path, rows: int, dim: int, n_queries: int) -> dict[str, int]:
    rng = np.random.default_rng(SEED)
    vectors = rng.standard_normal((rows, dim))
    vectors = np.round(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), 6)
    picks = rng.integers(0, rows, size=n_queries)
    queries = vectors[picks] + rng.standard_normal((n_queries, dim)) * (0.5 / math.sqrt(dim))
    np.save(work / "queries.npy", queries)
    with (
        (work / "embeddings.json").open("w", encoding="utf-8") as doc,
        (work / "embeddings.jsonl").open("w", encoding="utf-8") as lines,
    ):
        doc.write('{"chunks": [')
        for i, vector in enumerate(vectors):
            embedding = vector.tolist()
            source = f"docs/file{i // 20:05d}.md"
            chunk = {"chunk_id": f"c{i}", "text": f"chunk {i}", "source_file": source, "position": i % 20}
            doc.write(("," if i else "") + json.dumps({**chunk, "embedding": embedding}))
            row = {"id": f"r{i}", "text": f"row {i}", "collection": "bench", "source": source}
            lines.write(json.dumps({**row, "embedding": embedding}) + "\n")
        doc.write('], "indexed_at": "2024-06-01T00:00:00", "source_files": [], "config": {}}')
    (work / "manifest.json").write_text(json.dumps({"model": "random", "dimension": dim}))
    return {name: (work / name).stat().st_size for name in ("embeddings.json", "embeddings.jsonl")}


def compare(ours: list[list[Any]], original: list[list[Any]]) -> float:
    """The largest score difference; raises if any query's ids differ (in content or order)."""
    worst = 0.0
    for i, (a, b) in enumerate(zip(ours, original, strict=True)):
        if [x[0] for x in a] != [x[0] for x in b]:
            raise SystemExit(f"query {i}: ids differ: {[x[0] for x in a]} != {[x[0] for x in b]}")
        worst = max([worst, *(abs(x[1] - y[1]) for x, y in zip(a, b, strict=True))])
    if worst > TOLERANCE:
        raise SystemExit(f"scores differ by {worst:.3g} > {TOLERANCE}")
    return worst


def summarise(child: dict[str, Any]) -> dict[str, Any]:
    from hybrid_rag.evaluation.experiment import percentiles

    ms = percentiles(child["search_seconds"])
    out = {
        "load_s": round(child["load_s"], 2),
        "search_ms_p50": round(ms["p50"], 2),
        "search_ms_p95": round(ms["p95"], 2),
        "rss_held_mb": round(child["rss_held_bytes"] / 2**20),
        "peak_rss_mb": round(child["peak_rss_bytes"] / 2**20),
    }
    if "first_search_s" in child:
        out["first_search_s"] = round(child["first_search_s"], 2)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=10)


def run(args: argparse.Namespace) -> dict[str, Any]:
    WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WORK, prefix="compat_search.") as tmp:
        work = Path(tmp)
        print(f"writing {args.rows:,} rows of dimension {args.dim} to {work}", file=sys.stderr)
        sizes = write_files(work, args.rows, args.dim, args.queries)
        children = {}
        for kind in CHILDREN:
            print(f"running {kind}", file=sys.stderr, flush=True)
            command = [sys.executable, __file__, "--child", kind, "--work", str(work), "--k", str(args.k)]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            children[kind] = json.loads(done.stdout)

    systems = {}
    for name, prefix, size_key in (
        ("DocumentRetriever.search", "doc", "embeddings.json"),
        ("EmbeddingStore.search_by_vector", "store", "embeddings.jsonl"),
    ):
        ours, original = children[f"{prefix}-ours"], children[f"{prefix}-original"]
        worst = compare(ours["results"], original["results"])
        ours_s, original_s = summarise(ours), summarise(original)
        systems[name] = {
            "file_mb": round(sizes[size_key] / 2**20),
            "ours": ours_s,
            "original": original_s,
            "speedup_p50": round(original_s["search_ms_p50"] / ours_s["search_ms_p50"], 1),
            "same_ids_in_same_order": True,
            "max_abs_score_diff": worst,
        }
    return {
        "benchmark": "compat_search",
        "rows": args.rows,
        "dimension": args.dim,
        "queries": args.queries,
        "k": args.k,
        "systems": systems,
    }


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def render(result: dict[str, Any]) -> str:
    """Search p50 of each compat class against the loop it replaces, and the memory each holds."""
    lines = [
        "| class | search p50, hybrid_rag.compat | search p50, original | ratio "
        "| memory after load (ours / original) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, s in result["systems"].items():
        ours, original = s["ours"], s["original"]
        lines.append(
            f"| `{name}` | {_ms(ours['search_ms_p50'])} ms | {_ms(original['search_ms_p50'])} ms "
            f"| {s['speedup_p50']:.0f}x | {ours['rss_held_mb']:,} MB / {original['rss_held_mb']:,} MB |"
        )
    return "\n".join(lines)


def _child_main() -> None:
    """One search run in its own process (``run`` starts four), its results as JSON on stdout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=CHILDREN, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    json.dump(run_child(args.child, args.work, args.k), sys.stdout)


if __name__ == "__main__":
    _child_main()
