"""The hubness table's build cost (RESULTS.md#hubness): 7,500 random unit chunks (a quarter with two
windows), 384 dimensions, measured twice in full, then updated after adding 10 and removing 5.
The cost does not depend on what the vectors say, only on how many there are.

    nice -n 10 .venv/bin/python benchmarks/studies/_hubness_cost.py
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hybrid_rag.indices.hubness import measure
from hybrid_rag.indices.multivector import WindowedVectorIndex

N, DIMENSION = 7_500, 384


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def timed(label: str, run: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), time.process_time()
    out = run()
    print(f"{label}: wall {time.perf_counter() - wall:.2f} s, cpu {time.process_time() - cpu:.2f} s")
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    index = WindowedVectorIndex.create(DIMENSION, "m")
    windows = [unit(rng.normal(size=(1 + (i % 4 == 0), DIMENSION))) for i in range(N)]
    index.add(np.arange(N, dtype=np.int64), windows)
    print("load average before", os.getloadavg())
    table = None
    for _ in range(2):
        table = timed(f"full measure, {N} chunks ({index.window_count} windows)", lambda: measure(index, 10))
    timed("  reading the pooled vectors alone", lambda: index.vectors(index.ids()))
    index.remove(np.arange(5))
    index.add(np.arange(N, N + 10, dtype=np.int64), [w[None] for w in unit(rng.normal(size=(10, DIMENSION)))])
    timed("update after +10 -5", lambda: measure(index, 10, previous=table))
    print("load average after", os.getloadavg())


if __name__ == "__main__":
    main()
