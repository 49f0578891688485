"""Which embedder a setting means: the one place that picks between the fake embedder, a model
server, ONNX Runtime and torch (its own module, so ``onnx_embedder.py`` can build on
``embedders.py`` without an import cycle)."""

from __future__ import annotations

from hybrid_rag.models.embedders import (
    FAKE_MODEL_NAMES,
    FAKE_WINDOW_WORDS,
    FakeEmbedder,
    SentenceTransformerEmbedder,
    canonical_model_name,
)
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import EmbeddingSettings


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    """``model: fake`` (or ``fake-hash``) → FakeEmbedder, for tests and CI; ``provider: openai |
    ollama`` → a server (``models/remote.py``); else the local model: on ONNX Runtime
    (``onnx_embedder.py``) when ``runtime: onnx`` and the model has an ONNX form, else torch."""
    if settings.provider != "local":
        from hybrid_rag.models.remote import RemoteEmbedder

        return RemoteEmbedder(settings)
    if settings.model.strip().lower() in FAKE_MODEL_NAMES:
        return FakeEmbedder(dimension=256, window_words=FAKE_WINDOW_WORDS)
    if settings.runtime == "onnx":
        from hybrid_rag.models.onnx_embedder import OnnxEmbedder
        from hybrid_rag.models.onnx_runtime import embedder_files

        files = embedder_files(canonical_model_name(settings.model))
        if files is not None:
            return OnnxEmbedder(settings, files)
    return SentenceTransformerEmbedder(settings)
