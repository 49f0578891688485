"""The BERT graph built with onnx.helper from safetensors gives transformers' hidden states, and
the model cache builds it once, atomically (onnx_graph.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.models.onnx_graph import bert_graph, cached_bert_onnx


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised two-layer BertModel saved as model.safetensors + config.json."""
    torch = pytest.importorskip("torch", reason="the reference BertModel needs torch (the [torch] extra)")
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=40,
    )
    folder = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config, add_pooling_layer=False).eval().save_pretrained(folder, safe_serialization=True)
    return folder


def _reference(folder: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import torch
    from transformers import BertModel

    model = BertModel.from_pretrained(folder, add_pooling_layer=False).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    return out.last_hidden_state.numpy()


def _run(onnx_file: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    return session.run(
        None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    )[0]


def test_graph_hidden_states_equal_transformers_on_unpadded_tokens(
    tiny_bert: Path, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_MODEL_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 50, size=(3, 11)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0  # a padded row: its real tokens must not see the padding
    mask[2, 3:] = 0
    ours = _run(cached_bert_onnx(tiny_bert, "tiny"), ids, mask)
    theirs = _reference(tiny_bert, ids, mask)
    real = mask.astype(bool)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours[real], theirs[real], atol=2e-5)


def test_model_cache_builds_once_and_concurrent_builders_leave_one_whole_file(
    tiny_bert: Path, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_MODEL_CACHE", str(tmp_path))
    paths: list[Path] = []
    threads = [
        threading.Thread(target=lambda: paths.append(cached_bert_onnx(tiny_bert, "tiny"))) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(paths)) == 1
    target = paths[0]
    assert target.is_relative_to(tmp_path)
    assert [p.name for p in target.parent.iterdir()] == ["model.onnx"]  # no temp file left
    stamp = target.stat().st_mtime_ns
    assert cached_bert_onnx(tiny_bert, "tiny") == target
    assert target.stat().st_mtime_ns == stamp  # found, not rebuilt


def test_graph_refuses_an_activation_it_cannot_build() -> None:
    config = {"hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1, "hidden_act": "relu"}
    with pytest.raises(ValueError, match="gelu"):
        bert_graph({}, config)


def test_weights_of_a_model_with_a_head_are_found_under_the_bert_prefix(tiny_bert: Path, tmp_path) -> None:
    from safetensors.numpy import load_file

    weights = {f"bert.{k}": v for k, v in load_file(str(tiny_bert / "model.safetensors")).items()}
    weights["classifier.weight"] = np.zeros((1, 32), np.float32)
    config = json.loads((tiny_bert / "config.json").read_text())
    proto = bert_graph(weights, config)
    assert [o.name for o in proto.graph.output] == ["last_hidden_state"]


def test_the_graph_file_has_its_opset_s_format_version_not_the_newest_onnx_writes(
    tiny_bert: Path, tmp_path, monkeypatch
) -> None:
    """onnx 1.23 writes format (IR) version 14 by default, which onnxruntime-gpu 1.31 refuses to
    load; the graph is written at the version its opset needs, which every supported runtime reads."""
    import onnx

    from hybrid_rag.models.onnx_graph import IR_VERSION, OPSET

    monkeypatch.setenv("HYBRID_RAG_MODEL_CACHE", str(tmp_path))
    model = onnx.load(str(cached_bert_onnx(tiny_bert, "tiny")))
    assert model.ir_version == IR_VERSION < onnx.IR_VERSION
    assert {o.domain: o.version for o in model.opset_import}[""] == OPSET
    onnx.checker.check_model(model)
