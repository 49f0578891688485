"""ONNX inputs are tokenized first, sorted by word pieces and padded per batch to the longest member
only; with the default ``rerank.model_batch_size`` (1) a cross-encoder pair's score does not depend
on the other candidates or their order (the int8 graph quantizes a call's activations with one
scale, so in a shared batch a pair's logit moves with its neighbours)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from context_cases import scored_chunk

from hybrid_rag.models.onnx_runtime import OnnxModel, padded_feed
from hybrid_rag.models.rerankers import CrossEncoderReranker
from hybrid_rag.settings import RerankSettings


def test_a_batch_is_padded_to_its_longest_member_only() -> None:
    encodings = [
        SimpleNamespace(ids=[101, 7, 102], type_ids=[0, 0, 0]),
        SimpleNamespace(ids=[101, 102], type_ids=[0, 1]),
    ]
    feed = padded_feed(encodings, pad_id=0)
    assert feed["input_ids"].tolist() == [[101, 7, 102], [101, 102, 0]]
    assert feed["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert feed["token_type_ids"].tolist() == [[0, 0, 0], [0, 1, 0]]
    assert all(a.dtype == np.int64 for a in feed.values())
    assert padded_feed([], pad_id=0)["input_ids"].shape == (0, 0)


PASSAGES = [
    "Paris is the capital and largest city of France.",
    "The mitochondria is the powerhouse of the cell, " * 12,
    "France's capital, Paris, lies on the Seine; it has been the seat of government since 987.",
    "Boundary layer separation on a swept wing at high angles of attack.",
]


@pytest.mark.slow
def test_a_pairs_score_does_not_depend_on_the_other_candidates() -> None:
    reranker = CrossEncoderReranker(RerankSettings(model="ms-marco-MiniLM-L-12-v2"))
    assert reranker.settings.model_batch_size == 1
    query = "what is the capital of france?"
    candidates = [scored_chunk(i + 1, text, 1.0 / (i + 1)) for i, text in enumerate(PASSAGES)]
    together = reranker.score(query, candidates)
    alone = np.array([reranker.score(query, [c])[0] for c in candidates])
    reversed_order = reranker.score(query, candidates[::-1])[::-1]
    assert isinstance(reranker.model, OnnxModel)
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(together, reversed_order, atol=1e-5)
    assert together[0] > together[3] and together[2] > together[1]
