"""What users of the Kotlin retrieval module rely on: plain RRF, the word-overlap reranker, a
/rerank client given a base URL whose relevance_score can be the final score, and per-source-type
floors on the cosine (0.65 code / 0.35 text keep their meaning)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fake_http import serve
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.models.rerankers import ApiReranker
from hybrid_rag.retrieval.fusion import reciprocal_rank_fusion
from hybrid_rag.retrieval.rerank import OverlapReranker, make_reranker, overlap_ratio, rerank_candidates
from hybrid_rag.retrieval.thresholds import apply_min_scores
from hybrid_rag.settings import BM25Settings, RerankSettings
from hybrid_rag.types import Chunk, Hit, ScoredChunk, SourceType


def scored(
    i: int, text: str, score: float, source_type: str = "text", dense: float | None = None
) -> ScoredChunk:
    chunk = Chunk(i, i, f"/p/{i}.md", 0, 1, 1, text, 3, f"{i:064d}", SourceType(source_type), "text", "c")
    return ScoredChunk(chunk, score, {} if dense is None else {"dense": dense})


def test_rrf_is_the_plain_sum_of_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion({"dense": [Hit(1, 0.9), Hit(2, 0.8)], "bm25": [Hit(2, 7.0), Hit(3, 5.0)]})
    assert {f.id: f.score for f in fused} == pytest.approx({2: 1 / 62 + 1 / 61, 1: 1 / 61, 3: 1 / 62})
    assert [f.id for f in fused] == [2, 1, 3]


def test_overlap_reranker_scores_the_share_of_query_words() -> None:
    assert overlap_ratio("clay soil drainage", "Drainage in CLAY") == pytest.approx(2 / 3)
    assert overlap_ratio("", "anything") == 0.0
    assert overlap_ratio("функция класса", "функция") == 0.5
    reranker = make_reranker(RerankSettings(backend="overlap"), None, bm25=BM25Settings())  # type: ignore[arg-type]
    assert isinstance(reranker, OverlapReranker) and reranker.name == "overlap"
    heads = [
        scored(1, "nothing here", 0.9),
        scored(2, "clay soil", 0.5),
        scored(3, "clay soil drainage", 0.1),
    ]
    out = rerank_candidates(
        reranker, "clay soil drainage", heads, RerankSettings(backend="overlap", blend="none")
    )
    assert [c.id for c in out] == [3, 2, 1]
    assert [c.score for c in out] == pytest.approx([1.0, 2 / 3, 0.0])


def test_rerank_client_takes_a_base_url_and_uses_relevance_score_as_the_final_score() -> None:
    with serve("") as server:
        server.replies = [
            (
                200,
                json.dumps(
                    {"results": [{"index": 0, "relevance_score": 0.2}, {"index": 1, "relevance_score": 0.9}]}
                ).encode(),
            )
        ]
        settings = RerankSettings(backend="api", api_url=server.url, blend="none", retries=0)
        reranker = ApiReranker(settings)
        assert reranker.url == server.url + "/rerank"
        out = rerank_candidates(reranker, "q", [scored(1, "a", 0.9), scored(2, "b", 0.1)], settings)
        assert server.requests[0]["path"] == "/rerank"
    assert [(c.id, c.score) for c in out] == [(2, 0.9), (1, 0.2)]


def test_floors_on_the_cosine_keep_their_meaning() -> None:
    results = [
        scored(1, "a", 5.0, "code", dense=0.70),
        scored(2, "b", 4.0, "code", dense=0.60),
        scored(3, "c", 3.0, "text", dense=0.40),
        scored(4, "d", 2.0, "text", dense=0.30),
        scored(5, "e", 1.0, "text"),  # no cosine (a BM25-only hit): kept
    ]
    kept = apply_min_scores(results, 0.65, 0.35, on="dense")
    assert [r.id for r in kept] == [1, 3, 5]
    assert [r.id for r in apply_min_scores(results, 0.65, 0.35, on="final")] == [1, 2, 3, 4, 5]


def test_engine_applies_floors_to_the_cosine_when_asked(tmp_path, corpus) -> None:
    settings = fake_settings(
        tmp_path / "data",
        {
            "retrieval.threshold_on": "dense",
            "retrieval.min_score_text": 0.99,
            "retrieval.min_score_code": 0.99,
        },
    )
    engine = Engine(settings)
    engine.ingest([corpus])
    result = engine.query("compost drainage clay soil")
    assert all(c.breakdown["dense"] >= 0.99 for c in result.chunks)
    assert any("dense score is below" in n for n in result.trace.notes)
    engine.close()


def test_scores_are_arrays_of_floats() -> None:
    scores = OverlapReranker().score("a b", [scored(1, "a", 1.0)])
    assert scores.dtype == np.float64 and scores.tolist() == [0.5]
