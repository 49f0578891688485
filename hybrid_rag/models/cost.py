"""What embedding a chunk costs, roughly, before any model is loaded: the ingest's estimate of
how long its embedding will take (``ingest/bm25_first.py`` decides by it whether BM25 goes live
first).

The figures are seconds for one chunk of ``REFERENCE_TOKENS`` tokens on two idle cores (two
threads), from benchmarks/RESULTS.md: MiniLM 5.8-8.4 chunks/s (0.12-0.17 s; RESULTS.md#streaming-ingest
and RESULTS.md#first-answer-on-a-big-repository), multilingual-e5-small about 2.7x MiniLM on English
and 1.1-1.3x MiniLM's Russian rate (~0.4 s; RESULTS.md#languages), bge-small 1.7x MiniLM (~0.25 s;
RESULTS.md#onnx-model-runtime). A model not listed (a remote one, a user's) is taken as the
slowest listed: an estimate too high costs a BM25-only version first (seconds), one too low a wait
with nothing searchable. A busy machine divides the cores: the figure is multiplied by the load
average over the cores when that is above 1 (the issue's 63-minute ingest ran at load 8-19 on 2).
"""

from __future__ import annotations

import os
from typing import Any

REFERENCE_TOKENS = 800  # chunking.max_tokens's default: the figures are for chunks this long
SECONDS_PER_CHUNK = {
    "all-minilm-l6-v2": 0.15,
    "multilingual-e5-small": 0.4,
    "bge-small": 0.25,
}
UNKNOWN_SECONDS_PER_CHUNK = max(SECONDS_PER_CHUNK.values())


def model_seconds_per_chunk(embedder: Any) -> float:
    """Seconds to embed a chunk of ``REFERENCE_TOKENS`` tokens on two idle cores: the embedder's
    own ``seconds_per_chunk`` when it has one (the fake embedder: 0), else the figure of the model
    its name contains, else ``UNKNOWN_SECONDS_PER_CHUNK``."""
    own = getattr(embedder, "seconds_per_chunk", None)
    if isinstance(own, (int, float)):
        return float(own)
    name = str(getattr(embedder, "model_name", "")).lower()
    return next((s for key, s in SECONDS_PER_CHUNK.items() if key in name), UNKNOWN_SECONDS_PER_CHUNK)


def load_factor() -> float:
    """How many times slower than idle a busy machine embeds: load average / cores, at least 1."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on this platform
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))
