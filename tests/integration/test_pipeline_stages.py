"""The pipeline end to end through Engine.query: filters before search, generator and rerank
servers that fail or answer, multi-query on its own switch, score floors as a timed stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_http import closed_port, serve
from fake_settings import fake_settings

from hybrid_rag.engine import Engine

pytestmark = pytest.mark.integration


def completion(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}).encode()


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """Eleven notes that match "compost soil drainage" well and one, under keep/, that barely does."""
    root = tmp_path / "notes"
    (root / "keep").mkdir(parents=True)
    for i in range(11):
        (root / f"n{i:02d}.md").write_text(f"Compost soil drainage note {i}: compost and soil, drainage.\n")
    (root / "keep" / "other.md").write_text("Tomatoes like sun; the soil there is sandy.\n")
    return root


def engine_with(tmp_path: Path, folder: Path, overrides: dict[str, object]) -> Engine:
    settings = fake_settings(tmp_path / "data", {**overrides})
    engine = Engine(settings)
    engine.ingest([folder])
    return engine


def test_filters_restrict_the_search_itself_so_k_matches_come_back(tmp_path: Path, notes: Path) -> None:
    """With top-2 candidates per list, filtering after the search would leave nothing: the eleven
    notes fill both lists. Filtered before it (allowed ids), the one allowed chunk is found, by the
    first pass and by the expansion's searches alike."""
    engine = engine_with(tmp_path, notes, {"retrieval.dense_top_k": 2, "retrieval.bm25_top_k": 2})
    try:
        unfiltered = engine.query("compost soil drainage")
        assert all("/keep/" not in c.path for c in unfiltered.chunks)
        result = engine.query("compost soil drainage", filters="path~**/keep/**")
        assert [c.path.rsplit("/", 2)[-2:] for c in result.chunks] == [["keep", "other.md"]]
        assert {"dense", "bm25", "prf_dense"} <= set(result.chunks[0].breakdown)
    finally:
        engine.close()


def test_an_unreachable_generator_leaves_results_and_says_so(tmp_path: Path, corpus: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    engine = engine_with(
        tmp_path,
        corpus,
        {
            "generator.base_url": url,
            "generator.retries": 0,
            "expansion.method": "hyde",
            "features.multi_query": True,
        },
    )
    try:
        result = engine.query("compost drainage clay soil")
        assert result.chunks and result.chunks[0].path.endswith("garden.md")
        refused = f"generator at {url}/chat/completions unreachable: connection refused"
        assert f"expansion skipped (hyde): {refused}" in result.trace.notes
        assert "expansion: offline prf used instead of hyde" in result.trace.notes
        assert f"expansion skipped (multi_query): {refused}" in result.trace.notes
    finally:
        engine.close()


def test_hyde_and_multi_query_lists_are_fused_when_the_generator_answers(
    tmp_path: Path, corpus: Path
) -> None:
    with serve("/v1") as server:
        server.replies = [(200, completion("Compost improves drainage of heavy clay soil.\nsoil drainage"))]
        engine = engine_with(
            tmp_path,
            corpus,
            {"generator.base_url": server.url, "expansion.method": "hyde", "expansion.multi_query_n": 2},
        )
        try:
            plain = engine.query("compost drainage clay soil")
            assert len(server.requests) == 1 and "hyde" in plain.chunks[0].breakdown
            both = engine.query("compost drainage clay soil", features={"multi_query": True})
            assert {"hyde", "mq1_dense", "mq1_bm25", "mq2_bm25"} <= set(both.chunks[0].breakdown)
            assert len(server.requests) == 3  # one HyDE passage, one set of rewrites
            engine.query("compost drainage clay soil", features={"expansion": False, "multi_query": False})
            assert len(server.requests) == 3
        finally:
            engine.close()


def test_a_failing_rerank_server_leaves_the_fused_order_with_a_note(tmp_path: Path, corpus: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/rerank"
    engine = engine_with(
        tmp_path, corpus, {"rerank.backend": "api", "rerank.api_url": url, "rerank.retries": 0}
    )
    try:
        fused = engine.query("compost drainage clay soil")
        reranked = engine.query("compost drainage clay soil", features={"rerank": True})
        assert [c.id for c in reranked.chunks] == [c.id for c in fused.chunks]
        assert f"rerank skipped: reranker at {url} unreachable: connection refused" in reranked.trace.notes
    finally:
        engine.close()


def test_score_floors_are_a_timed_stage_that_says_what_it_dropped(tmp_path: Path, corpus: Path) -> None:
    engine = engine_with(tmp_path, corpus, {"retrieval.min_score_text": 1e9})
    try:
        floored = engine.query("compost drainage clay soil")
        assert "thresholds" in {t.stage for t in floored.trace.timings}
        assert all(c.source_type.value == "code" for c in floored.chunks)
        assert any(n.startswith("thresholds dropped 1 of 2 result(s)") for n in floored.trace.notes)
        off = engine.query("compost drainage clay soil", features={"thresholds": False})
        assert off.chunks[0].path.endswith("garden.md") and "thresholds" not in {
            t.stage for t in off.trace.timings
        }
    finally:
        engine.close()
