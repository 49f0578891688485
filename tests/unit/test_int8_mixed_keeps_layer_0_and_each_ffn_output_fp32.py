"""``embedding.quantize: int8-mixed``: MiniLM's graph in int8 except the first layer and each
layer's FFN output product (those lose the quality, RESULTS.md#int8-by-layer), which stay fp32.
Its vectors are another model's (``#int8-mixed``): the embedding cache never hands a vector of one
precision to another, and the index manifests name it apart."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.factory import MIXED_KEEP_FP32, make_embedder
from hybrid_rag.models.onnx_graph import (
    INT8_PARTS,
    bert_graph,
    cached_int8_onnx,
    int8_file_name,
    named_int8_parts,
)
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.embedding_cache import embed_missing, embed_windows

HIDDEN, FFN, LAYERS = 8, 16, 2


def _tiny_bert(tmp_path: Path) -> Path:
    """A 2-layer BERT with random weights, as ``bert_graph`` builds MiniLM's."""
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(0)
    w = {
        "embeddings.word_embeddings.weight": rng.normal(size=(30, HIDDEN)),
        "embeddings.position_embeddings.weight": rng.normal(size=(16, HIDDEN)),
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, HIDDEN)),
        "embeddings.LayerNorm.weight": np.ones(HIDDEN),
        "embeddings.LayerNorm.bias": np.zeros(HIDDEN),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        for name, shape in {
            "attention.self.query": (HIDDEN, HIDDEN),
            "attention.self.key": (HIDDEN, HIDDEN),
            "attention.self.value": (HIDDEN, HIDDEN),
            "attention.output.dense": (HIDDEN, HIDDEN),
            "intermediate.dense": (FFN, HIDDEN),
            "output.dense": (HIDDEN, FFN),
        }.items():
            w[f"{p}.{name}.weight"] = rng.normal(size=shape) * 0.3
            w[f"{p}.{name}.bias"] = rng.normal(size=shape[0]) * 0.1
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{norm}.weight"], w[f"{p}.{norm}.bias"] = np.ones(HIDDEN), np.zeros(HIDDEN)
    config = {"hidden_size": HIDDEN, "num_attention_heads": 2, "num_hidden_layers": LAYERS}
    path = tmp_path / "model.onnx"
    onnx.save(bert_graph({k: v.astype(np.float32) for k, v in w.items()}, config), str(path))
    return path


def test_layer_0_and_each_ffn_output_stay_fp32_and_every_other_product_is_int8(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime.quantization")
    fp32 = _tiny_bert(tmp_path)
    parts = named_int8_parts(onnx.load(str(fp32)))
    assert sorted(parts.values()) == sorted(
        f"{i}.{p}" for i in range(LAYERS) for p in ("qkv", "attn_out", "ffn_in", "ffn_out")
    )
    whole, mixed = cached_int8_onnx(fp32), cached_int8_onnx(fp32, MIXED_KEEP_FP32)
    assert whole.name == "model.int8.onnx" and mixed.name == int8_file_name(MIXED_KEEP_FP32) != whole.name

    def fp32_products(path: Path) -> list[str]:
        """The weights still read by an fp32 MatMul or fused Attention."""
        graph = onnx.load(str(path)).graph
        return sorted(n.input[1] for n in graph.node if n.op_type in ("MatMul", "Attention"))

    assert fp32_products(whole) == []
    layer_0 = [f"encoder.layer.0{suffix}" for suffix in INT8_PARTS.values()]
    ffn_outputs = [f"encoder.layer.{i}.output.dense.weight_t" for i in range(1, LAYERS)]
    assert fp32_products(mixed) == sorted(layer_0 + ffn_outputs)
    ops = {n.op_type for n in onnx.load(str(mixed)).graph.node}
    assert {"QAttention", "MatMulInteger"} <= ops
    only_ffn = cached_int8_onnx(fp32, frozenset({"ffn_out"}))  # a part in every layer
    assert fp32_products(only_ffn) == [f"encoder.layer.{i}.output.dense.weight_t" for i in range(LAYERS)]
    one_part = cached_int8_onnx(fp32, frozenset({"1.qkv"}))  # one product of one layer
    assert fp32_products(one_part) == ["encoder.layer.1.qkv.weight_t"]


def test_each_precision_is_named_apart_and_loads_nothing_yet() -> None:
    names = {
        q: make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize=q)).model_name
        for q in ("none", "int8", "int8-mixed")
    }
    assert names["int8-mixed"] == "sentence-transformers/all-MiniLM-L6-v2#int8-mixed#defs2"
    assert len(set(names.values())) == 3
    mixed = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize="int8-mixed"))
    assert mixed._model is None  # type: ignore[attr-defined]
    assert mixed.files.keep_fp32 == MIXED_KEEP_FP32  # type: ignore[attr-defined]


def test_the_embedding_cache_never_mixes_two_precisions(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path / "store.sqlite3")  # created by its first write
    texts = {"a" * 64: "the pool holds connections", "b" * 64: "a bundled copy of six"}
    names = [
        make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize=q)).model_name
        for q in ("none", "int8", "int8-mixed")
    ]
    embedded: list[str] = []

    def embed(embedder: Embedder, batch: Sequence[str]) -> list[np.ndarray]:
        embedded.extend(batch)
        return embed_windows(embedder, batch)

    for name in names:  # each precision embeds every text once, none is served another's vectors
        embedded.clear()
        embed_missing(store, FakeEmbedder(16, model_name=name), texts, keep=True, embed=embed)
        assert sorted(embedded) == sorted(texts.values()), name
    for name in names:  # ... and then finds its own
        embedded.clear()
        windows, fresh = embed_missing(
            store, FakeEmbedder(16, model_name=name), texts, keep=True, embed=embed
        )
        assert (embedded, fresh, sorted(windows)) == ([], 0, sorted(texts)), name


SAMPLE_TEXTS = [
    "The boundary layer thickens downstream of the shock.",
    "def parse(query): return Filter.from_string(query)",
    "Heat transfer in laminar flow over a flat plate.",
    "python how to read a file line by line into a list",
]


def cosines_to_fp32(quantize: str) -> np.ndarray:
    """Each of ``SAMPLE_TEXTS``' vectors at ``quantize`` against its fp32 one (the packaged MiniLM)."""

    def vectors(precision: str) -> np.ndarray:
        settings = EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize=precision, threads=1)
        return make_embedder(settings).embed_passages(SAMPLE_TEXTS)

    return np.asarray((vectors("none") * vectors(quantize)).sum(axis=1))


@pytest.mark.slow
def test_the_mixed_vectors_are_closer_to_fp32_than_the_int8_ones() -> None:
    to_int8, to_mixed = cosines_to_fp32("int8"), cosines_to_fp32("int8-mixed")
    # measured on 240 cosqa and cranfield texts: int8 mean .951, mixed .997 (RESULTS.md#int8-by-layer)
    assert np.all(to_mixed > 0.98) and np.all(to_mixed > to_int8)
