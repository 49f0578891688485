"""Embeddings from a server (``embedding.provider: openai | ollama``), behind the ``Embedder`` protocol.

* ``openai``: ``POST {base_url}/embeddings`` with ``{model, input: [...]}``, answered by
  ``{"data": [{"index", "embedding"}, ...]}``: OpenAI, vLLM, TEI, llama.cpp's server, LiteLLM
  (``base_url`` ends in ``/v1``).
* ``ollama``: ``POST {base_url}/api/embed`` with ``{model, input: [...]}``, answered by
  ``{"embeddings": [[...], ...]}``.

Texts go in batches of ``embedding.batch_size``; a request is retried on connection errors,
timeouts, 429 and 5xx (``embedding.retries``, with backoff) through the same client as the
generator (``generation.post_json``); every failure is one ``RemoteServiceError`` naming the URL.
Vectors are L2-normalised here, so inner product is cosine as for the local model. The dimension
is learnt from the first answer; the index refuses vectors of another model or dimension at load
(``hybrid-rag rebuild`` re-embeds). Nothing is sent before the first ``embed_*`` call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from hybrid_rag.errors import ConfigError, RemoteServiceError
from hybrid_rag.models.generation import BACKOFF_SECONDS, post_json
from hybrid_rag.settings import EmbeddingSettings
from hybrid_rag.vectors import l2_normalise

PROVIDERS = ("openai", "ollama")


def embeddings_url(provider: str, base_url: str) -> str:
    """The endpoint of a provider.

    >>> embeddings_url("openai", "http://gpu:8000/v1/"), embeddings_url("ollama", "http://h:11434")
    ('http://gpu:8000/v1/embeddings', 'http://h:11434/api/embed')
    """
    base = base_url.rstrip("/")
    return base + ("/embeddings" if provider == "openai" else "/api/embed")


def parse_embeddings(provider: str, raw: bytes, n: int) -> np.ndarray:
    """The (n, d) float32 matrix of an answer, in input order; ValueError for any other shape."""
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError("answered with something that is not JSON") from None
    if provider == "openai":
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise ValueError("answered without a 'data' list")
        rows: Any = [d.get("embedding") for d in sorted(data, key=lambda d: d.get("index", 0))]
    else:
        rows = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(rows, list):
            raise ValueError("answered without an 'embeddings' list")
    if len(rows) != n:
        raise ValueError(f"answered {len(rows)} vectors for {n} texts")
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValueError("answered vectors that are not lists of numbers of one length") from None
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        raise ValueError("answered vectors that are empty or not finite")
    return matrix


class RemoteEmbedder:
    """An ``Embedder`` over an embedding server (see the module docstring)."""

    def __init__(self, settings: EmbeddingSettings, *, backoff: float = BACKOFF_SECONDS) -> None:
        if settings.provider not in PROVIDERS:
            raise ConfigError(f"embedding.provider {settings.provider!r} is not a remote provider")
        if not settings.base_url:
            raise ConfigError(
                f"embedding.provider {settings.provider} needs embedding.base_url, e.g. "
                + ("http://127.0.0.1:8000/v1" if settings.provider == "openai" else "http://127.0.0.1:11434")
            )
        self.settings = settings
        self.provider = settings.provider
        self.url = embeddings_url(settings.provider, settings.base_url)
        self.backoff = backoff
        self._dimension: int | None = None

    @property
    def model_name(self) -> str:
        """The embedding cache's and the index's key: provider and model, so a local and a served
        model of the same name never share vectors."""
        return f"{self.provider}:{self.settings.model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed_queries(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def expect_dimension(self, dimension: int) -> None:
        """The dimension an index built with this model holds: known without asking the server
        (a query can then fall back to BM25 when the server is down); answers are checked against it."""
        if self._dimension is None:
            self._dimension = dimension

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([(self.settings.passage_prefix or "") + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([(self.settings.query_prefix or "") + t for t in texts])

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        size = self.settings.batch_size
        parts = [self._request(texts[i : i + size]) for i in range(0, len(texts), size)]
        return l2_normalise(np.vstack(parts))

    def _request(self, batch: list[str]) -> np.ndarray:
        s = self.settings
        matrix = post_json(
            self.url,
            {"model": s.model, "input": batch},
            parse=lambda raw: parse_embeddings(self.provider, raw, len(batch)),
            what="embedder",
            api_key_env=s.api_key_env,
            timeout=s.timeout_seconds,
            retries=s.retries,
            backoff=self.backoff,
        )
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise RemoteServiceError(
                f"embedder at {self.url} answered vectors of dimension {matrix.shape[1]}, "
                f"earlier {self._dimension}: is embedding.model {s.model!r} served consistently?"
            )
        return matrix
