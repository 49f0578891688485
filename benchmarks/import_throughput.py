"""``hybrid-rag import`` throughput with the file's vectors reused (nothing embedded).

    .venv/bin/python benchmarks/import_throughput.py [--rows 10000 100000]

Writes an ``embeddings.jsonl`` of N rows (Zipfian text of 60-120 words, 256-dimension vectors of
the fake embedder, so the dimension fits ``embedding.model: fake`` and every vector is reused),
imports it into a fresh data dir, and reports rows/s split into reading, the store write and the
index build (BM25 tokenisation dominates: the vectors cost no embedding). A second import of the
unchanged file measures the no-op path. Results: benchmarks/results/import_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

ROOT = Path(__file__).resolve().parent
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


def run(rows: int, seed: int = 0) -> dict[str, object]:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    results = [run(n) for n in args.rows]
    payload = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        },
        "results": results,
    }
    out = ROOT / "results" / "import_throughput.json"
    out.write_text(json.dumps(payload, indent=1) + "\n")
    for r in results:
        print(f"{r['rows']:>7} rows: {r['rows_per_second']:>8} rows/s ({r['seconds']} s; {r['stages']})")


if __name__ == "__main__":
    main()
