"""``embedding.quantize: int8``: the packaged model's built graph with int8 weights, named ``#int8``
(the embedding cache and index manifests never mix its vectors with the fp32 model's), close to
the fp32 vectors; a model shipped as its own ONNX file is refused rather than quietly left fp32."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import ConfigError
from hybrid_rag.models.factory import make_embedder, quantized
from hybrid_rag.models.onnx_runtime import OnnxFiles
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings


def test_int8_is_named_apart_and_loads_nothing_yet() -> None:
    emb = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize="int8"))
    assert emb.model_name == "sentence-transformers/all-MiniLM-L6-v2#int8#defs2"
    assert emb._model is None  # type: ignore[attr-defined]
    assert emb.files.quantize  # type: ignore[attr-defined]


def test_a_model_shipped_as_onnx_is_refused_and_an_int8_one_kept(tmp_path: Path) -> None:
    shipped = OnnxFiles("some/model", tmp_path, tmp_path / "model.onnx", tmp_path / "tokenizer.json", 128)
    with pytest.raises(ConfigError, match="embedding.quantize none"):
        quantized(shipped)
    int8 = OnnxFiles("bge#int8", tmp_path, tmp_path / "model.onnx", tmp_path / "tokenizer.json", 128)
    assert quantized(int8) is int8


@pytest.mark.slow
def test_int8_vectors_are_close_to_the_fp32_ones() -> None:
    texts = [
        "The boundary layer thickens downstream of the shock.",
        "def parse(query): return Filter.from_string(query)",
        "Heat transfer in laminar flow over a flat plate.",
    ]
    fp32 = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, threads=1)).embed_passages(texts)
    int8 = make_embedder(
        EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize="int8", threads=1)
    ).embed_passages(texts)
    cosines = (fp32 * int8).sum(axis=1)
    assert np.all(cosines > 0.8)  # measured 0.88 to 0.97 (RESULTS.md#first-answer-on-a-big-repository)
    assert np.argmax(int8 @ int8[0]) == 0
