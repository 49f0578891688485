"""The legacy ``retrieve_for_text`` (dense only, one index, no rerank or filters) and
``compose_messages`` (the old prompt, at most four chunks)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fake_settings import fake_settings

from hybrid_rag.compat.legacy import MAX_CHUNKS, compose_messages, retrieve_for_text
from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder


@pytest.fixture
def data_dir(tmp_path, corpus, monkeypatch):
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = tmp_path / "data"
    engine = Engine(fake_settings(data))
    engine.ingest([corpus])
    engine.close()
    return data


def test_retrieve_for_text_is_plain_cosine_order(data_dir) -> None:
    hits = retrieve_for_text("compost drainage clay soil", data_dir=data_dir)
    assert 0 < len(hits) <= 4
    assert set(hits[0]) == {"text", "path", "start_line", "end_line", "score", "citation"}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    query = FakeEmbedder(dimension=256).embed_queries(["compost drainage clay soil"])[0]
    best = FakeEmbedder(dimension=256).embed_passages([hits[0]["text"]])[0]
    assert hits[0]["score"] == pytest.approx(
        float(np.dot(query, best)), abs=0.05
    )  # MaxP windows: near the cosine
    assert len(retrieve_for_text("soil", top_k=1, data_dir=data_dir)) == 1


def test_compose_messages_keeps_at_most_four_chunks() -> None:
    chunks = [{"text": f"t{i}", "citation": f"a.md:{i}-{i}"} for i in range(6)]
    system, user = compose_messages("what?", chunks)
    assert system["role"] == "system" and user["role"] == "user"
    assert len(re.findall(r"^\[\d+\] ", user["content"], flags=re.M)) == MAX_CHUNKS
    assert "[4] a.md:3-3\nt3" in user["content"] and "t4" not in user["content"]
    assert user["content"].endswith("Question: what?")
