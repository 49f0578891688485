"""The self-check: retries stop at their limit even when rewrites never run out, the default is two
more tries, the context shows the self-check's verdict (not the kept result's own scores), `query`
runs it only when the call asks, and the kept retry's reformulation time is in the trace."""

from __future__ import annotations

import pytest
from context_cases import query_log, query_result, scored_chunk

from hybrid_rag.context.selfcheck import SelfCheck, confidence
from hybrid_rag.settings import Settings
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, StageTiming, Trace


def _weak(query: str) -> QueryResult:
    chunks = tuple(
        ScoredChunk(
            Chunk(i, i, f"d{i}.txt", 0, 1, 1, t, 1, f"{i:064x}", SourceType.TEXT, "text", "c"),
            0.5,
            {"dense": 0.0},
        )
        for i, t in enumerate(("unrelated words", "nothing relevant", "other matters"), start=1)
    )
    return QueryResult(query, "hybrid", chunks, Trace((StageTiming("dense", 0.001),)))


class _EndlessGenerator:
    """Always has a new rewrite: the loop can only stop at its limit."""

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        self.calls += 1
        return f"rewrite number {self.calls}"


@pytest.mark.parametrize("max_retries", [0, 1, 2, 3])
def test_retries_stop_at_the_limit_even_when_rewrites_never_run_out(max_retries):
    seen: list[str] = []

    def retrieve(q: str) -> QueryResult:
        seen.append(q)
        return _weak(q)

    cfg = Settings().with_overrides({"context.max_retries": max_retries})
    checked = SelfCheck(cfg.context, retrieve, _EndlessGenerator()).run("how are turbine blades cooled")
    assert len(seen) == 1 + max_retries
    assert len(checked.attempts) == 1 + max_retries and checked.weak


def test_default_limit_is_two_more_tries_with_three_offline_rewrites_available():
    """A multi-part question has split, expand and keywords rewrites: only two are used."""
    seen: list[str] = []

    def retrieve(q: str) -> QueryResult:
        seen.append(q)
        return _weak(q)

    checked = SelfCheck(Settings().context, retrieve).run("what is turbine lift? how does blade drag scale?")
    assert [a.strategy for a in checked.attempts] == ["original", "split", "expand"]
    assert len(seen) == 1 + 2 + 1  # the original, the two parts of the split, the expansion


QUESTION = "how long to proof sourdough bread"


def _rewrite_finds_its_own_kind(query: str, **_: object) -> QueryResult:
    """The question finds nothing; a rewrite finds hits close to the rewrite (dense 0.8) that hold
    none of the question's terms."""
    if query == QUESTION:
        weak = ("unrelated", "nothing", "other")
        return query_result(query, *(scored_chunk(i, t, 0.5, 0.05) for i, t in enumerate(weak, 1)))
    return query_result(
        query,
        scored_chunk(5, "wing lift at subsonic speed", 0.9, 0.8),
        scored_chunk(6, "wing drag", 0.1, 0.7),
    )


def test_the_context_shows_the_self_checks_verdict_not_the_kept_results_own_dense_scores(engine, monkeypatch):
    monkeypatch.setattr(engine.retriever, "query", _rewrite_finds_its_own_kind)
    monkeypatch.setattr(engine.retriever, "dense_scores", lambda q, ids: [0.05] * len(ids))
    ctx, checked = engine.context(QUESTION, log=True)
    assert checked is not None and checked.retried and checked.weak
    threshold = engine.settings.context.confidence_threshold
    assert confidence(checked.result, QUESTION) >= threshold  # what the context used to show
    assert (ctx.confidence, ctx.weak_evidence) == (checked.confidence, checked.weak)
    assert f"Retrieval confidence: {checked.confidence:.2f} (weak" in ctx.render()
    assert ctx.to_dict()["weak_evidence"] is True
    record = query_log(engine)[-1]
    assert (record["confidence"], record["weak"]) == (round(checked.confidence, 6), True)


def test_query_runs_the_self_check_only_when_the_call_asks_for_it(engine, corpus):
    engine.ingest([corpus])
    assert engine.settings.features.self_check  # on by default, for context and ask
    plain = engine.query("world cup 1998 final", log=True)
    assert not any(n.startswith("self-check") for n in plain.trace.notes)
    checked = engine.query("world cup 1998 final", log=True, features={"self_check": True})
    assert any(n.startswith("self-check") for n in checked.trace.notes)
    assert any(t.stage == "self_check" for t in checked.trace.timings)
    before, after = query_log(engine)[-2:]
    assert "attempts" not in before and "confidence" not in before
    assert after["weak"] is True and after["retried"] is True and len(after["attempts"]) >= 2
    assert all(a["stages_ms"] for a in after["attempts"])


def test_the_kept_retrys_own_reformulation_time_is_in_the_trace():
    weak = ("unrelated words", "nothing relevant", "other matters")
    calls: list[str] = []

    def retrieve(q: str) -> QueryResult:
        calls.append(q)
        if len(calls) == 2:
            return query_result(
                q, scored_chunk(9, "turbine blade cooling", 0.9, 0.8), scored_chunk(8, "other", 0.2, 0.1)
            )
        return query_result(q, *(scored_chunk(i, t, 0.5, 0.05) for i, t in enumerate(weak, 1)))

    checked = SelfCheck(Settings().context, retrieve).run("how are turbine blades cooled")
    assert len(checked.attempts) == 2 and checked.confidence == checked.attempts[1].confidence
    stages = [t.stage for t in checked.result.trace.timings]
    assert stages.count("reformulate") == 1 and stages.count("self_check") == 1
    assert checked.result.trace.total_seconds == pytest.approx(sum(a.seconds for a in checked.attempts))
    assert set(checked.attempts[1].to_dict()["stages_ms"]) == {"reformulate", "dense"}
