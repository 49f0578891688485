"""``hybrid-rag import`` throughput with the file's vectors reused (nothing embedded).

    .venv/bin/python benchmarks/harness.py run import_throughput [--rows 10000 100000]
    .venv/bin/python benchmarks/harness.py report import_throughput   # RESULTS.md#import-throughput's table

Writes an ``embeddings.jsonl`` of N rows (Zipfian text of 60-120 words, 256-dimension vectors of
the fake embedder, so the dimension fits ``embedding.model: fake`` and every vector is reused),
imports it into a fresh data dir, and reports rows/s split into reading, the store write and the
index build (BM25 tokenisation dominates: the vectors cost no embedding). A second import of the
unchanged file measures the no-op path.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

WORDS = np.array([f"w{i}" for i in range(5000)])
ZIPF = 1.0 / np.arange(1, len(WORDS) + 1)
ZIPF /= ZIPF.sum()


def write_rows(path: Path, n: int, rng: np.random.Generator) -> None:
    vectors = rng.standard_normal((n, 256)).astype(np.float32)
    with path.open("w") as out:
        for i in range(n):
            words = rng.choice(WORDS, size=int(rng.integers(60, 121)), p=ZIPF)
            row = {
                "doc_id": f"doc{i // 10:06d}",
                "position": i % 10,
                "text": " ".join(words),
                "collection": "bench",
                "tags": ["a" if i % 2 else "b"],
                "embedding": [round(float(x), 6) for x in vectors[i]],
            }
            out.write(json.dumps(row) + "\n")


def import_once(rows: int, seed: int = 0) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "embeddings.jsonl"
        write_rows(path, rows, rng)
        settings = Settings().with_overrides(
            {"paths.data_dir": str(Path(tmp) / "data"), "embedding.model": "fake"}
        )
        engine = Engine(settings)
        start = time.perf_counter()
        report = engine.import_file(path)
        total = time.perf_counter() - start
        again = time.perf_counter()
        second = engine.import_file(path)
        noop = time.perf_counter() - again
        engine.close()
    assert report.reused_vectors == rows and report.embedded == 0 and second.version is None
    return {
        "rows": rows,
        "seconds": round(total, 3),
        "rows_per_second": round(rows / total, 1),
        "stages": {k: round(v, 3) for k, v in report.seconds.items()},
        "reused_vectors": report.reused_vectors,
        "embedded": report.embedded,
        "unchanged_reimport_seconds": round(noop, 3),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])


def run(args: argparse.Namespace) -> dict[str, Any]:
    results = [import_once(n) for n in args.rows]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {"peak_rss_gib": round(peak, 2), "results": results}


def render(payload: dict[str, Any]) -> str:
    """One row an import size: seconds, rows/s, its stages, reuse, and the unchanged re-import."""
    lines = [
        "| rows | seconds | rows/s | read | store | index build | vectors reused | embedded "
        "| unchanged re-import (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in payload["results"]:
        st = r["stages"]
        lines.append(
            f"| {r['rows']:,} | {r['seconds']:.1f} | {r['rows_per_second']:,.0f} | {st['read']:.1f} "
            f"| {st['store']:.1f} | {st['index']:.1f} | {r['reused_vectors']:,} | {r['embedded']:,} "
            f"| {r['unchanged_reimport_seconds']:.1f} |"
        )
    return "\n".join(lines)
