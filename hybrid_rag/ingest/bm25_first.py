"""Whether an ingest stores its files first and lets BM25 answer while the vectors fill in
(``fill.py``), or embeds them as they stream (one version at the end).

BM25 first when the files to write hold at least ``ingest.bm25_first_min_bytes``, or when their
embedding is estimated to take at least ``ingest.bm25_first_min_seconds``: the chunks they will
make (a chunk of ``chunking.max_tokens`` tokens every ``BYTES_PER_TOKEN`` x that many bytes of a
file, at least one a file) times the model's cost per chunk on this machine now
(``models/cost.py``: the model's figure on two idle cores times the load over the cores). The
estimate is made before anything is chunked or any model is loaded; chunks whose vectors are
cached are counted all the same (an ingest of changed files may be estimated too slow: then it
publishes a BM25-only version first, a few seconds' work).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hybrid_rag.models.cost import REFERENCE_TOKENS, load_factor, model_seconds_per_chunk
from hybrid_rag.types import LoadedFile

BYTES_PER_TOKEN = 4  # of the chunker's tokens, on average over English prose and code (UTF-8)


@dataclass(frozen=True)
class EmbedEstimate:
    chunks: int
    seconds: float  # to embed them on this machine now


def estimate_embedding(files: Sequence[LoadedFile], embedder: object, max_tokens: int) -> EmbedEstimate:
    """How many chunks ``files`` make and how long ``embedder`` takes to embed them."""
    chunk_bytes = max(1, max_tokens * BYTES_PER_TOKEN)
    chunks = sum(max(1, -(-f.size // chunk_bytes)) for f in files)
    per_chunk = model_seconds_per_chunk(embedder) * max_tokens / REFERENCE_TOKENS
    return EmbedEstimate(chunks, chunks * per_chunk * (load_factor() if per_chunk else 1.0))


def bm25_first_pays(
    files: Sequence[LoadedFile], embedder: object, *, max_tokens: int, min_bytes: int, min_seconds: float
) -> bool:
    """Whether the ingest of ``files`` goes BM25 first (see the module docstring)."""
    if not files:
        return False
    if sum(f.size for f in files) >= min_bytes:
        return True
    return estimate_embedding(files, embedder, max_tokens).seconds >= min_seconds
