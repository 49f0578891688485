"""Topic summaries: map-reduce through a generator (one call a member chunk, then one a topic), a
failing generator falls back to extractive summaries with a note in the trace, the context and the
query log; a mixed topic is summarised from sentences and signatures alike."""

from __future__ import annotations

import json
import re

import pytest
from context_cases import EMBED, REACTOR, VIOLIN, ingested, query_log, query_result, scored_chunk
from fake_http import closed_port, serve
from fake_settings import fake_settings

from hybrid_rag.context import ContextBuilder
from hybrid_rag.context import evidence as ev
from hybrid_rag.context import summaries as sm
from hybrid_rag.engine import Engine
from hybrid_rag.models.generation import make_generator
from hybrid_rag.settings import Settings
from hybrid_rag.types import QueryResult


def test_a_failing_generator_degrades_end_to_end_with_notes_in_trace_context_and_log(tmp_path, corpus):
    cfg = fake_settings(
        tmp_path / "data",
        {
            "generator.base_url": "http://127.0.0.1:9/v1",  # discard port: nothing listens
            "generator.retries": 0,
            "generator.timeout_seconds": 2,
        },
    )
    engine = Engine(cfg)
    try:
        engine.ingest([corpus])
        ctx, checked = engine.context("quasar nebula telescope spectrum", log=True)
        assert checked is not None and checked.retried
        assert [a.strategy for a in checked.attempts][1:] in (
            ["expand", "keywords"],
            ["keywords"],
            ["expand"],
        )
        assert re.search(r"generator failed \(\w+", checked.attempts[1].note)
        assert any("generator failed" in n for n in checked.result.trace.notes)
        assert any("generator failed" in n and "extractive summaries used" in n for n in ctx.notes)
        assert ctx.sources and all(t.summary for t in ctx.clusters)  # the offline summaries stand in
        record = json.loads((tmp_path / "data" / "logs" / "queries.jsonl").read_text().splitlines()[-1])
        assert any("generator failed" in n for n in record["notes"])
    finally:
        engine.close()


def _topics(per_topic: int) -> QueryResult:
    """Two topics of ``per_topic`` chunks each."""
    texts = [f"{REACTOR} alpha{i}" for i in range(per_topic)]
    texts += [f"{VIOLIN} violin{i}" for i in range(per_topic)]
    chunks = (scored_chunk(i + 1, t, 1.0 - 0.05 * i) for i, t in enumerate(texts))
    return query_result("reactor coolant and violin sonata", *chunks)


def _completion(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}).encode()


def _http_builder(url: str, **context: object) -> ContextBuilder:
    cfg = Settings().with_overrides(
        {"generator.base_url": url, "generator.retries": 0, "generator.timeout_seconds": 5}
        | {f"context.{k}": v for k, v in context.items()}
    )
    return ContextBuilder(cfg.context, EMBED, make_generator(cfg.generator))


def _prompts(server) -> list[str]:  # type: ignore[no-untyped-def]
    return [json.loads(r["body"])["messages"][-1]["content"] for r in server.requests]


@pytest.mark.parametrize(("map_chunks", "maps", "reduces"), [(2, 4, 2), (4, 6, 2), (1, 2, 0)])
def test_map_reduce_is_one_call_a_member_chunk_then_one_a_topic(map_chunks, maps, reduces):
    result = _topics(3)
    with serve("/v1") as server:
        server.replies = [(200, _completion("Partial summary."))]
        ctx = _http_builder(server.url, summary_map_chunks=map_chunks).build(result.query, result)
        prompts = _prompts(server)
    assert len(ctx.clusters) == 2
    assert sum("Passage [" in p for p in prompts) == maps
    assert sum("Summaries of passages on one topic" in p for p in prompts) == reduces
    assert len(prompts) == maps + reduces
    assert [t.summary for t in ctx.clusters] == ["Partial summary."] * 2
    assert any(t.stage == "summarize" for t in ctx.result.trace.timings)


def test_a_failing_reduce_falls_back_to_extractive_summaries_with_a_note_in_the_trace():
    result = _topics(3)
    with serve("/v1") as server:  # the first topic's two maps answer, its reduce fails, then nothing is asked
        server.replies = [(200, _completion("Partial."))] * 2 + [(500, b'{"error": "oom"}')]
        ctx = _http_builder(server.url, summary_map_chunks=2).build(result.query, result)
        calls = len(server.requests)
    assert calls == 3
    extractive = ContextBuilder(Settings().context, EMBED).build(result.query, result)
    assert [t.summary for t in ctx.clusters] == [t.summary for t in extractive.clusters]
    (note,) = [n for n in ctx.notes if "summary generator failed" in n]
    assert "500" in note and "extractive summaries used for 2 of 2 topic(s)" in note
    assert note in ctx.result.trace.notes
    assert [t.note for t in ctx.result.trace.timings if t.stage == "summarize"] == [note]


def test_a_summary_generator_failure_reaches_the_trace_and_the_query_log(tmp_path, corpus):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    engine = ingested(tmp_path, corpus, **{"generator.base_url": url, "generator.retries": 0})
    try:
        ctx, checked = engine.context("compost drainage clay soil", log=True, features={"self_check": False})
        assert checked is None
        record = query_log(engine)[-1]
    finally:
        engine.close()
    (note,) = [n for n in ctx.notes if "summary generator failed" in n]
    assert note in ctx.result.trace.notes and note in record["notes"]
    assert {"context", "summarize", "dense", "total"} <= set(record["stages_ms"])


CODE = "def load_config(path):\n    data = read(path)\n    return parse(data)\n\nclass ConfigCache:\n    pass"


PROSE = "The configuration is read from a YAML file. Every key has a default value."


def test_a_mixed_topic_is_summarised_from_sentences_and_signatures_alike():
    units = ev.code_units(0, CODE.split("\n")) + ev.prose_units(1, PROSE.split("\n"))
    code = [True, False]
    pool = sm.candidates(units, range(len(units)), code)
    assert {units[j].text for j in pool} == {
        "def load_config(path):",
        "class ConfigCache:",
        "The configuration is read from a YAML file.",
        "Every key has a default value.",
    }
    assert sm.candidates(units[1:3], [0, 1], code) == [0, 1]  # no signature, no prose: every code line
    result = query_result(
        "where does load_config read the configuration",
        scored_chunk(1, CODE, path="config.py", code=True),
        scored_chunk(2, PROSE, path="config.md"),
    )
    cfg = Settings().with_overrides({"context.summary_sentences": 4, "context.summary_max_tokens": 200})
    (topic,) = ContextBuilder(cfg.context, EMBED).build(result.query, result).clusters
    assert "`def load_config(path)`" in topic.summary  # a signature and a sentence, both matching
    assert "The configuration is read from a YAML file." in topic.summary
    assert "read(path)" not in topic.summary  # a code line that is not a signature
    assert "Every key has a default value." not in topic.summary  # matches nothing asked
