"""Self-check: the confidence function, the retry loop and its limits, the offline rewrites."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_rag.context.selfcheck import (
    SelfCheck,
    confidence,
    expansion_terms,
    keywords,
    merge_results,
    reformulate,
    split_parts,
)
from hybrid_rag.settings import Settings
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, StageTiming, Trace


def _sc(cid: int, text: str, score: float, dense: float | None = None) -> ScoredChunk:
    chunk = Chunk(cid, cid, f"d{cid}.txt", 0, 1, 1, text, 1, f"{cid:064x}", SourceType.TEXT, "text", "c")
    return ScoredChunk(chunk, score, {} if dense is None else {"dense": dense})


def _result(query: str, *chunks: ScoredChunk) -> QueryResult:
    return QueryResult(query, "hybrid", chunks, Trace((StageTiming("dense", 0.01),)))


WEAK = ("unrelated words", "nothing relevant", "other matters")


def _weak(query: str) -> QueryResult:
    return _result(query, *(_sc(i + 1, t, 0.5, dense=0.05) for i, t in enumerate(WEAK)))


def _strong(query: str) -> QueryResult:
    return _result(
        query, _sc(9, "turbine blade cooling in jet engines", 0.9, dense=0.8), _sc(8, "other", 0.2, dense=0.1)
    )


# -- confidence --------------------------------------------------------------------------------


def test_confidence_is_zero_without_results_and_in_unit_range():
    assert confidence(_result("q"), "q") == 0.0
    for result in (_weak("turbine blade cooling"), _strong("turbine blade cooling")):
        assert 0.0 <= confidence(result, "turbine blade cooling") <= 1.0


def test_confidence_rises_with_dense_cosine_coverage_and_margin():
    q = "turbine blade cooling"
    low = _result(q, _sc(1, "turbine", 0.5, dense=0.3), _sc(2, "x", 0.5, dense=0.1))
    higher_dense = _result(q, _sc(1, "turbine", 0.5, dense=0.6), _sc(2, "x", 0.5, dense=0.1))
    higher_cover = _result(q, _sc(1, "turbine blade cooling", 0.5, dense=0.3), _sc(2, "x", 0.5, dense=0.1))
    higher_margin = _result(q, _sc(1, "turbine", 0.9, dense=0.3), _sc(2, "x", 0.1, dense=0.1))
    base = confidence(low, q)
    assert confidence(higher_dense, q) > base
    assert confidence(higher_cover, q) > base
    assert confidence(higher_margin, q) > base


def test_confidence_without_dense_scores_uses_the_other_signals():
    q = "turbine blade"
    bm25_only = _result(q, _sc(1, "turbine blade", 3.0), _sc(2, "blade", 3.0))
    # full coverage (0.40 x 1), equal scores (margin 0.15 x 0), no dense weight
    assert confidence(bm25_only, q) == pytest.approx(0.40 / 0.55)
    assert confidence(_result(q, _sc(1, "nothing", 3.0), _sc(2, "else", 3.0)), q) == 0.0
    assert confidence(_result("the of and", _sc(1, "x", 1.0)), "the of and") == 0.0  # no signal at all


# -- reformulation -------------------------------------------------------------------------------


def test_offline_rewrites():
    assert keywords("How do I open a file in Python?") == "open file Python"
    assert split_parts("What is a turbine? How is it cooled?") == ["What is a turbine", "How is it cooled"]
    assert split_parts("what is lift and how does drag scale") == ["what is lift", "how does drag scale"]
    assert split_parts("lift and drag") == ["lift and drag"]

    best = _result("q", _sc(1, "blade blade cooling film", 1.0), _sc(2, "blade film holes", 0.5))
    assert expansion_terms("cooling", best.chunks, n=2) == ["blade", "film"]
    strategy, queries = reformulate("how is cooling done", best, {"how is cooling done"})
    assert strategy == "expand" and queries == ["cooling blade film holes"]
    assert reformulate("how is cooling done", best, {"how is cooling done", "cooling blade film holes"}) == (
        "keywords",
        ["cooling"],
    )


def test_multi_part_questions_split_in_russian_and_portuguese() -> None:
    assert split_parts("что такое индекс и как его изменить") == ["что такое индекс", "как его изменить"]
    both = ["Где хранятся пароли", "Как сбросить пароль"]
    assert split_parts("Где хранятся пароли? Как сбросить пароль?") == both
    assert split_parts("пароли и ключи") == ["пароли и ключи"]  # no question word after "и"
    assert split_parts("o que é um índice e como refazê-lo") == ["o que é um índice", "como refazê-lo"]
    assert split_parts("senhas e chaves") == ["senhas e chaves"]


def test_merge_results_is_rrf_with_ties_by_id():
    a = _result("a", _sc(3, "x", 1.0, dense=0.9), _sc(1, "y", 0.5))
    b = _result("b", _sc(1, "y", 1.0), _sc(3, "x", 0.5))
    merged = merge_results("a and b", [a, b])
    assert [c.id for c in merged.chunks] == [1, 3]  # equal fused scores: the lower id first
    assert merged.chunks[1].breakdown["dense"] == 0.9
    assert len(merged.trace.timings) == 2


# -- the retry loop --------------------------------------------------------------------------------


class _Counting:
    def __init__(self, make) -> None:  # type: ignore[no-untyped-def]
        self.make = make
        self.queries: list[str] = []

    def __call__(self, query: str) -> QueryResult:
        self.queries.append(query)
        return self.make(query)


def test_low_confidence_retries_and_stops_after_two_more_tries():
    retrieve = _Counting(_weak)
    checked = SelfCheck(Settings().context, retrieve).run("how are turbine blades cooled")
    assert len(retrieve.queries) == 3
    assert len(checked.attempts) == 3 and checked.weak and checked.retried
    assert [a.strategy for a in checked.attempts] == ["original", "expand", "keywords"]
    assert len(set(retrieve.queries)) == 3
    assert any("self-check" in n for n in checked.result.trace.notes)
    assert checked.result.query == "how are turbine blades cooled"


def test_no_retry_when_confident_and_none_when_max_retries_is_zero():
    retrieve = _Counting(_strong)
    checked = SelfCheck(Settings().context, retrieve).run("turbine blade cooling")
    assert len(retrieve.queries) == 1 and not checked.retried and not checked.weak
    weak = _Counting(_weak)
    SelfCheck((Settings().with_overrides({"context.max_retries": 0})).context, weak).run(
        "turbine blade cooling"
    )
    assert len(weak.queries) == 1


def test_stops_as_soon_as_a_retry_is_confident_and_keeps_the_best_attempt():
    retrieve = _Counting(lambda q: _strong(q) if len(retrieve.queries) == 2 else _weak(q))
    checked = SelfCheck(Settings().context, retrieve).run("how are turbine blades cooled")
    assert len(retrieve.queries) == 2
    assert checked.result.chunks[0].id == 9 and not checked.weak
    assert checked.confidence == checked.attempts[1].confidence > checked.attempts[0].confidence
    assert any(t.stage == "self_check" for t in checked.result.trace.timings)


def test_a_multi_part_question_is_split_and_merged():
    retrieve = _Counting(_weak)
    checked = SelfCheck(Settings().context, retrieve).run("what is lift? how does drag scale?")
    assert retrieve.queries[1:3] == ["what is lift", "how does drag scale"]
    assert checked.attempts[1].strategy == "split"
    assert checked.attempts[1].query == "what is lift | how does drag scale"


class _Gen:
    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.calls = 0

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        self.calls += 1
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_generator_rewrites_the_query_when_configured():
    retrieve = _Counting(_weak)
    gen = _Gen('"turbine blade film cooling"\n')
    checked = SelfCheck(Settings().context, retrieve, gen).run("how are turbine blades cooled")
    assert retrieve.queries[1] == "turbine blade film cooling"
    assert checked.attempts[1].strategy == "generator"


def test_a_failing_generator_degrades_to_the_offline_rewrite_with_a_note():
    retrieve = _Counting(_weak)
    gen = _Gen(TimeoutError("no answer in 30 s"))
    checked = SelfCheck(Settings().context, retrieve, gen).run("how are turbine blades cooled")
    assert gen.calls == 1  # not asked again after failing
    assert len(retrieve.queries) == 3
    assert [a.strategy for a in checked.attempts] == ["original", "expand", "keywords"]
    assert "generator failed (TimeoutError" in checked.attempts[1].note
    assert any("generator failed" in n for n in checked.result.trace.notes)


def test_a_retry_is_judged_by_its_cosine_to_the_original_question_not_to_the_rewrite():
    question = "how long to proof sourdough bread"
    threshold = Settings().context.confidence_threshold
    asked: list[tuple[str, list[int]]] = []

    def retrieve(q: str) -> QueryResult:
        """The first try is weak; a rewrite finds hits close to itself (cosine 0.8) that hold
        none of the question's terms."""
        if q == question:
            return _weak(q)
        return _result(
            q, _sc(5, "wing lift at subsonic speed", 0.9, dense=0.8), _sc(6, "wing", 0.1, dense=0.7)
        )

    def relevance(q: str, ids: list[int]) -> list[float]:
        asked.append((q, list(ids)))
        return [0.05, float("nan")][: len(ids)]  # unrelated to the question; 6 has no vector

    lifted = SelfCheck(Settings().context, retrieve).run(question)
    assert lifted.attempts[1].confidence > threshold and not lifted.weak  # the flaw without relevance
    judged = SelfCheck(Settings().context, retrieve, relevance=relevance).run(question)
    assert judged.weak and len(judged.attempts) == 3
    assert all(a.confidence < threshold for a in judged.attempts)
    assert len(asked) == 2 and all(q == question and ids == [5, 6] for q, ids in asked)
    assert judged.attempts[0].confidence == lifted.attempts[0].confidence  # the first try: unchanged


def test_relevance_is_not_used_for_hits_without_a_dense_score():
    calls: list[str] = []
    bm25_only = SelfCheck(
        Settings().context,
        lambda q: _result(q, _sc(1, "nothing", 3.0), _sc(2, "else", 1.0)),
        relevance=lambda q, ids: calls.append(q) or [0.9] * len(ids),
    )
    assert bm25_only.run("turbine blade").weak and calls == []


def test_engine_judges_retries_by_the_live_dense_index(engine, corpus):
    engine.ingest([corpus])
    result = engine.query("compost drainage clay soil", mode="dense")
    ids = [c.id for c in result.chunks]
    np.testing.assert_allclose(
        engine.retriever.dense_scores("compost drainage clay soil", ids),
        [c.breakdown["dense"] for c in result.chunks],
        rtol=1e-5,
    )
    assert np.isnan(engine.retriever.dense_scores("soil", [10**9])[0])
    _, checked = engine.context("world cup 1998 final", features={"self_check": True})  # lifted to .27 before
    assert checked is not None and checked.retried and checked.weak
