"""The rerankers that run a model: a cross-encoder (ONNX Runtime or sentence-transformers) and a
``/rerank`` HTTP endpoint (Cohere, Jina, TEI). They score (query, candidate) pairs; the merge of
their scores into the ranking, and the rerankers that need no model, are ``retrieval/rerank.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import ConfigError, ModelError
from hybrid_rag.models.embedders import _in_hf_cache, _quiet_loading
from hybrid_rag.models.generation import BACKOFF_SECONDS, _preview, post_json
from hybrid_rag.models.load_once import LoadsOnce
from hybrid_rag.models.onnx_runtime import OnnxModel, cross_encoder_files
from hybrid_rag.settings import RerankSettings
from hybrid_rag.types import ScoredChunk

# -- cross-encoder -----------------------------------------------------------------------------


def resolve_cross_encoder(primary: str | None, fallback: str | None) -> str:
    """The first of ``primary`` and ``fallback`` that is a local folder or in the local HF cache."""
    for name in (primary, fallback):
        if not name or not name.strip():
            continue
        path = Path(name).expanduser()
        if path.is_dir():
            return str(path)
        if not path.is_absolute() and not name.startswith((".", "~")) and _in_hf_cache(name.strip()):
            return name.strip()
    tried = " nor ".join(repr(n) for n in (primary, fallback) if n)
    raise ModelError(
        f"no cross-encoder available offline: neither {tried} is a local folder or in the Hugging Face "
        "cache; set rerank.model to ms-marco-MiniLM-L-12-v2 or a model folder, or rerank.backend to "
        "embedding_windows"
    )


class CrossEncoderReranker(LoadsOnce):
    """A cross-encoder: on ONNX Runtime (``runtime="onnx"`` and the model has an ONNX form) or a
    sentence-transformers CrossEncoder; loads lazily (once, thread-safely), scores raw logits.

    Pairs longer than ``max_length`` word pieces (capped by what the model allows) are truncated
    by the model's tokenizer; logits, not sigmoid scores, are returned, so nothing saturates to a tie.
    """

    name = "cross_encoder"

    def __init__(
        self, settings: RerankSettings, device: str = "cpu", *, runtime: str = "onnx", threads: Any = "auto"
    ) -> None:
        self.settings = settings
        self.device = device
        self.runtime = runtime
        self.threads = threads
        LoadsOnce.__init__(self)  # model: loaded on first use
        self.source: str | None = None

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        if not candidates:
            return np.zeros(0, dtype=np.float64)
        model = self.model
        pairs = [(query, c.text) for c in candidates]
        if isinstance(model, OnnxModel):
            return model.score_pairs(pairs, self.settings.model_batch_size)
        import torch

        scores = model.predict(
            pairs,
            batch_size=self.settings.model_batch_size,
            activation_fn=torch.nn.Identity(),
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(scores, dtype=np.float64).reshape(len(candidates), -1)[:, 0]

    def _load(self) -> Any:
        if self.runtime == "onnx":
            files = cross_encoder_files(self.settings.model)
            if files is not None:
                limited = replace(files, max_length=min(files.max_length, self.settings.max_length))
                model = OnnxModel(limited, self.threads, device=self.device)
                model.raw_tokenizer  # noqa: B018 - loads the session now, under the caller's lock
                self.source = files.model_id
                return model
        source = resolve_cross_encoder(self.settings.model, self.settings.fallback_model)
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ModelError(
                f"cross-encoder {source!r} has no ONNX form and needs the torch runtime: "
                "pip install 'hybrid-rag[torch]', or set rerank.model to ms-marco-MiniLM-L-12-v2"
            ) from None

        try:
            with _quiet_loading():
                model = CrossEncoder(source, device=self.device, local_files_only=True)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ModelError(f"cannot load cross-encoder {source!r}: {first}") from exc
        model_limit = model.max_seq_length
        model.max_seq_length = min(self.settings.max_length, model_limit or self.settings.max_length)
        self.source = source
        return model


# -- HTTP API ----------------------------------------------------------------------------------


def rerank_url(url: str) -> str:
    """The endpoint: a URL ending in ``/rerank`` as given, a base URL with ``/rerank`` added.

    >>> rerank_url("http://127.0.0.1:8080"), rerank_url("http://h/v1/rerank")
    ('http://127.0.0.1:8080/rerank', 'http://h/v1/rerank')
    """
    return url if url.rstrip("/").endswith("/rerank") else url.rstrip("/") + "/rerank"


def rerank_payload(api_format: str, model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
    """The request: Cohere / Jina ``{model, query, documents, top_n}``; TEI ``{query, texts, truncate}``."""
    if api_format == "tei":
        return {"query": query, "texts": list(documents), "truncate": True}
    return {"model": model, "query": query, "documents": list(documents), "top_n": len(documents)}


def parse_rerank_response(body: bytes, n: int) -> np.ndarray:
    """One score per document from ``{"results": [{index, relevance_score}]}`` (Cohere, Jina) or
    ``[{index, score}]`` (TEI), in any order; ValueError says what is wrong."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"returned malformed JSON: {_preview(body)}") from None
    rows = data.get("results") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ValueError(f"returned no results list: {_preview(body)}")
    scores = np.full(n, np.nan)
    for row in rows:
        value = row.get("relevance_score", row.get("score")) if isinstance(row, dict) else None
        index = row.get("index") if isinstance(row, dict) else None
        if not isinstance(index, int) or not 0 <= index < n or not isinstance(value, (int, float)):
            raise ValueError(f"returned a malformed result: {_preview(json.dumps(row))}")
        scores[index] = float(value)
    if np.isnan(scores).any():
        raise ValueError(f"scored {int(np.sum(~np.isnan(scores)))} of {n} documents")
    return scores


class ApiReranker:
    """A ``/rerank`` endpoint (``rerank.api_url`` is the full URL); documents go in batches of
    ``rerank.batch_size`` (TEI refuses more than 32 by default), each retried like the generator:
    connection errors, timeouts, 429 and 5xx ``rerank.retries`` times; anything else fails at once.
    ``Authorization: Bearer`` is sent when the variable ``rerank.api_key_env`` names is set.
    """

    name = "api"

    def __init__(self, settings: RerankSettings, *, backoff: float = BACKOFF_SECONDS) -> None:
        if not settings.api_url:  # its form was checked when the settings loaded
            raise ConfigError(
                "rerank.api_url is not set: give the http(s) URL of a rerank endpoint such as "
                "http://127.0.0.1:8080/rerank"
            )
        self.settings = settings
        self.url = rerank_url(str(settings.api_url))
        self.backoff = float(backoff)

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        texts = [c.text for c in candidates]
        size = self.settings.batch_size
        parts = [self._score_batch(query, texts[i : i + size]) for i in range(0, len(texts), size)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)

    def _score_batch(self, query: str, texts: list[str]) -> np.ndarray:
        s = self.settings
        return post_json(
            self.url,
            rerank_payload(s.api_format, s.model, query, texts),
            parse=lambda raw: parse_rerank_response(raw, len(texts)),
            what="reranker",
            api_key_env=s.api_key_env,
            timeout=s.timeout_seconds,
            retries=s.retries,
            backoff=self.backoff,
        )
