"""``embedding.quantize: int8-smooth``: SmoothQuant before the per-column int8 graph
(``models/smooth_quant.py``). The smoothed fp32 graph computes what the original does (each
product's input divided by ``s``, its weight rows multiplied by it); its int8 form is another file
and another vector set (``#int8-smooth``), closer to fp32 than ``int8``'s (RESULTS.md#minilm-int8-smooth)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_int8_mixed_keeps_layer_0_and_each_ffn_output_fp32 import LAYERS, _tiny_bert, cosines_to_fp32

from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.onnx_graph import cached_int8_onnx, named_int8_parts
from hybrid_rag.models.precision import chosen_precision, precision_of
from hybrid_rag.models.smooth_quant import (
    ALPHA,
    calibration_texts,
    random_feeds,
    smoothed,
    smoothed_file_name,
)
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _run(path: Path, ids: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    names = {i.name for i in session.get_inputs()}
    return np.asarray(session.run(None, {k: v for k, v in feed.items() if k in names})[0])


def test_the_smoothed_graph_computes_what_the_original_does(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    fp32 = _tiny_bert(tmp_path)
    model = onnx.load(str(fp32))
    parts = named_int8_parts(model)
    nodes = {n.name: n for n in model.graph.node}
    rng = np.random.default_rng(1)
    channels = {nodes[name].input[0]: (16 if part.endswith("ffn_out") else 8) for name, part in parts.items()}
    maxima = {name: rng.uniform(0.1, 30.0, size).astype(np.float32) for name, size in channels.items()}
    out = tmp_path / "smooth" / "model.smooth.onnx"
    out.parent.mkdir()
    onnx.save(smoothed(model, maxima, ALPHA), str(out))

    graph = onnx.load(str(out)).graph
    muls = [n for n in graph.node if n.op_type == "Mul" and n.name.endswith(".smoothed_input")]
    assert len(muls) == LAYERS * 4  # one before each product of each layer
    readers = {n.input[0] for n in graph.node if n.op_type in ("MatMul", "Attention") and n.name in parts}
    assert readers == {m.output[0] for m in muls}
    ids = rng.integers(1, 30, (3, 7)).astype(np.int64)
    assert np.allclose(_run(out, ids), _run(fp32, ids), atol=1e-4)

    def ffn_output(graph: object) -> np.ndarray:
        weight = next(t for t in graph.initializer if t.name.endswith("output.dense.weight_t"))  # type: ignore[attr-defined]
        return np.asarray(onnx.numpy_helper.to_array(weight))

    assert not np.allclose(ffn_output(graph), ffn_output(onnx.load(str(fp32)).graph))  # the rows moved
    # its int8 form is named after it, apart from the plain graph's
    smooth_file = out.with_name(smoothed_file_name())
    out.rename(smooth_file)
    int8 = cached_int8_onnx(smooth_file, per_channel=True, reduce_range=True)
    assert int8.name == "model.smooth-a0.75-v1.int8-pc-r7.onnx"


def test_the_calibration_is_packaged_and_the_random_sequences_are_fixed() -> None:
    texts = calibration_texts()
    assert len(texts) == 96 and all(200 < len(t) <= 1000 for t in texts)

    class Vocabulary:
        def get_vocab_size(self) -> int:
            return 3000

        def token_to_id(self, token: str) -> int | None:
            return {"[CLS]": 101, "[SEP]": 102}.get(token)

    first, again = random_feeds(Vocabulary(), 12), random_feeds(Vocabulary(), 12)
    ids = np.concatenate([f["input_ids"] for f in first])
    assert ids.shape == (64, 12) and (ids[:, 0] == 101).all() and (ids[:, -1] == 102).all()
    assert ids[:, 1:-1].min() >= 100 and ids.max() < 3000
    assert all((a["input_ids"] == b["input_ids"]).all() for a, b in zip(first, again, strict=True))


def test_int8_smooth_is_named_apart_and_auto_keeps_it() -> None:
    names = {
        q: make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize=q)).model_name
        for q in ("none", "int8", "int8-mixed", "int8-smooth")
    }
    assert names["int8-smooth"] == f"{MINILM}#int8-smooth#defs2" and len(set(names.values())) == 4
    files = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize="int8-smooth")).files  # type: ignore[attr-defined]
    assert files.quantize and files.per_channel and files.smooth == ALPHA
    recorded = names["int8-smooth"]
    assert precision_of(recorded) == "int8-smooth"
    auto = EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, quantize="auto")
    assert chosen_precision(auto, DEFAULT_EMBEDDING_MODEL, recorded) == ("int8-smooth", "")


@pytest.mark.slow
def test_the_smooth_vectors_are_closer_to_fp32_than_the_int8_ones() -> None:
    to_int8, to_smooth = cosines_to_fp32("int8"), cosines_to_fp32("int8-smooth")
    # measured on 240 cosqa and cranfield texts: int8 mean .951, int8-smooth .996
    assert np.all(to_smooth > 0.985) and to_smooth.mean() > to_int8.mean()
