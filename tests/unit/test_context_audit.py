"""Second audit of the ContextBuilder and the self-check: one source of truth for the confidence,
the fill order under tight budgets, pieces of over-long lines, map-reduce summaries through an
HTTP generator, failures and timings in the trace and the log, the self-check on a raw query,
exact prose quotes, and files with CRLF endings or no final newline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fake_http import closed_port, serve

from hybrid_rag.context import ContextBuilder, cited_ids, fragment_cuts
from hybrid_rag.context import evidence as ev
from hybrid_rag.context import summaries as sm
from hybrid_rag.context.budget import Filler
from hybrid_rag.context.render import Quote, Topic, render_context
from hybrid_rag.embedders import FakeEmbedder
from hybrid_rag.engine import Engine
from hybrid_rag.generation import make_generator
from hybrid_rag.retrieval.selfcheck import SelfCheck, confidence
from hybrid_rag.settings import Settings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, StageTiming, Trace

EMBED = FakeEmbedder(dimension=32).embed_passages


def _sc(
    cid: int, text: str, score: float = 1.0, dense: float = 0.5, *, path: str = "", code: bool = False
) -> ScoredChunk:
    """Chunk ``cid``: ``text`` as lines 1.. of ``path``, scored ``score``, dense cosine ``dense``."""
    kind, language = (SourceType.CODE, "python") if code else (SourceType.TEXT, "text")
    chunk = Chunk(
        cid, cid, path or f"d{cid}.txt", 0, 1, 1 + text.count("\n"), text, count_tokens(text),
        f"{cid:064x}", kind, language, "c",
    )  # fmt: skip
    return ScoredChunk(chunk, score, {"dense": dense})


def _result(query: str, *chunks: ScoredChunk) -> QueryResult:
    return QueryResult(query, "hybrid", chunks, Trace((StageTiming("dense", 0.001),)))


def _log(engine: Engine) -> list[dict]:
    return [json.loads(line) for line in engine.querylog.path.read_text().splitlines()]


def _ingested(tmp_path: Path, root: Path, **overrides: object) -> Engine:
    """An Engine with the fake embedder under ``tmp_path``, settings ``overrides``, ``root`` ingested."""
    cfg = Settings().with_overrides(
        {"paths.data_dir": str(tmp_path / "data"), "embedding.model": "fake"} | overrides
    )
    engine = Engine(cfg)
    engine.ingest([root])
    return engine


# -- 1. the Context's confidence is the self-check's verdict ------------------------------------------

QUESTION = "how long to proof sourdough bread"


def _rewrite_finds_its_own_kind(query: str, **_: object) -> QueryResult:
    """The question finds nothing; a rewrite finds hits close to the rewrite (dense 0.8) that hold
    none of the question's terms."""
    if query == QUESTION:
        weak = ("unrelated", "nothing", "other")
        return _result(query, *(_sc(i, t, 0.5, 0.05) for i, t in enumerate(weak, 1)))
    return _result(query, _sc(5, "wing lift at subsonic speed", 0.9, 0.8), _sc(6, "wing drag", 0.1, 0.7))


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
    record = _log(engine)[-1]
    assert (record["confidence"], record["weak"]) == (round(checked.confidence, 6), True)


# -- 2. one quote a topic before any topic's second, by relevance, within the budget ----------------


def _filler(costs: list[list[int]], scores: list[list[float]], labels: list[int], budget: int) -> Filler:
    chunks = [_sc(i + 1, "\n".join("x" * len(costs[i])), path=f"f{i}.txt") for i in range(len(costs))]
    return Filler(
        chunks,
        [np.array(s) for s in scores],
        np.array(labels),
        costs,
        [10] * len(costs),
        heading_cost=2,
        summary_cost={},
        fixed_cost=0,
        budget=budget,
        quote_max_tokens=400,
    )


def test_every_topic_gets_its_cheapest_fitting_quote_before_any_topic_gets_a_second():
    """Topic A's two best chunks are single 60-token lines (over the 40-token share); its third
    is a 10-token line. Topic B's three chunks are 10-token lines. In rank order A0 B0 A1 B1 A2 B2."""
    labels = [0, 1, 0, 1, 0, 1]
    costs = [[60], [10], [60], [10], [10], [10]]
    scores = [[0.9], [0.7], [0.8], [0.6], [0.3], [0.5]]
    filler = _filler(costs, scores, labels, budget=130)
    assert filler.share == 40
    plan = filler.fill()
    firsts = [labels[key] for kind, key, _ in plan.log if kind == "quote"][:2]
    assert sorted(firsts) == [0, 1], "both topics are quoted before either gets a second quote"
    assert 4 in plan.windows and 1 in plan.windows  # A's cheap chunk and B's best
    assert 0 not in plan.windows  # A's 60-token line did not take B's room
    assert filler.used <= filler.budget


def test_a_topic_whose_lines_are_all_over_its_share_gets_its_best_line_not_a_long_window():
    labels = [0, 1]
    costs = [[50, 45, 45], [10]]
    scores = [[0.9, 0.5, 0.5], [0.7]]
    plan = _filler(costs, scores, labels, budget=40 + 62 + 22 + 20).fill()
    assert plan.windows == {0: (0, 0), 1: (0, 0)}


def test_best_line_takes_the_most_relevant_line_that_fits():
    assert ev.best_line([0.1, 0.9, 0.9, 0.5], [5, 9, 7, 5], 8) == 2
    assert ev.best_line([0.1, 0.9, 0.9, 0.5], [5, 9, 7, 5], 6) == 3
    assert ev.best_line([0.9, 0.0], [5, 1], 100, blocked=[True, False]) is None


def test_a_heading_scores_nothing_so_a_quote_never_is_or_starts_with_a_bare_heading():
    lines = ["# Reciprocal rank fusion", "", "Fusion adds one over k plus the rank for each list."]
    units = ev.prose_units(0, lines)
    assert [u.heading for u in units] == [True, False]
    scores = ev.line_scores(3, lines, [(u, 0.9) for u in units])
    assert scores[0] == 0.0 and scores[2] > 0
    text = "\n".join(lines)
    result = _result("reciprocal rank fusion", _sc(1, text, path="fusion.md"))
    quoted = []
    for budget in range(40, 160, 4):
        ctx = ContextBuilder(Settings().context, EMBED).build(result.query, result, budget)
        assert ctx.token_count <= budget
        quoted += [q.text for q in ctx.quotes]
    assert quoted and set(quoted) == {lines[2]}


# -- 3. pieces of an over-long line are quoted exactly and marked as fragments -----------------------

LONG_LINE = " ".join(
    [*(f"word{i}" for i in range(70)), "zebra giraffe savanna", *(f"term{i}" for i in range(70))]
)


@pytest.fixture()
def long_line_engine(tmp_path: Path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "notes.txt").write_text(f"A short first line about animals.\n{LONG_LINE}\nA short last line.\n")
    engine = _ingested(tmp_path, root, **{"chunking.min_tokens": 10, "chunking.max_tokens": 40})
    yield engine, root / "notes.txt"
    engine.close()


def test_pieces_of_an_over_long_line_are_quoted_exactly_and_marked_on_their_cut_sides(long_line_engine):
    engine, path = long_line_engine
    line = path.read_text().split("\n")[1]
    chunks = engine.store.document_chunks(next(iter(engine.store.chunks([1]).values())).document_id)
    pieces = [c for c in chunks if c.start_line == c.end_line == 2]
    assert len(pieces) > 2 and all(p.text in line and p.text != line for p in pieces)
    cuts = fragment_cuts(engine.store, [ScoredChunk(c, 1.0) for c in chunks])
    assert set(cuts) == {p.id for p in pieces}
    for p in pieces:
        assert cuts[p.id] == (not line.startswith(p.text), not line.endswith(p.text))

    ctx, _ = engine.context("zebra giraffe savanna", top_k=3, features={"self_check": False})
    text = ctx.render()
    fragments = [q for q in ctx.quotes if q.fragment]
    assert any(q.cut_before and q.cut_after and "zebra giraffe" in q.text for q in fragments)
    for q in ctx.quotes:
        assert q.to_dict()["fragment"] is q.fragment
        if q.fragment:
            assert q.text in line and (q.start_line, q.end_line) == (2, 2)
            assert (q.cut_before, q.cut_after) == (not line.startswith(q.text), not line.endswith(q.text))
            shown = ("…" if q.cut_before else "") + q.text + ("…" if q.cut_after else "")
            assert f"[{q.citation}] {q.ref}\n> {shown}\n" in text
        else:
            assert q.text == "\n".join(path.read_text().split("\n")[q.start_line - 1 : q.end_line])


def test_a_code_fragment_is_marked_inside_its_fence():
    quote = Quote(
        1,
        7,
        "app.min.js",
        1,
        1,
        "function(a){return a}",
        SourceType.CODE,
        "javascript",
        1,
        0.5,
        cut_before=True,
    )
    text = render_context("q", 0.5, False, [], [Topic(1, "", (1,), (7,))], [quote], [])
    assert "[1] app.min.js:1-1\n```javascript\n…function(a){return a}\n```\n" in text


# -- 4. and 5. map-reduce summaries through an HTTP generator; failures in notes, trace and log -----

REACTOR = "alpha beta gamma delta reactor coolant pressure valve"
VIOLIN = "violin sonata orchestra concerto melody rhythm tempo"


def _topics(per_topic: int) -> QueryResult:
    """Two topics of ``per_topic`` chunks each."""
    texts = [f"{REACTOR} alpha{i}" for i in range(per_topic)]
    texts += [f"{VIOLIN} violin{i}" for i in range(per_topic)]
    chunks = (_sc(i + 1, t, 1.0 - 0.05 * i) for i, t in enumerate(texts))
    return _result("reactor coolant and violin sonata", *chunks)


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
    engine = _ingested(tmp_path, corpus, **{"generator.base_url": url, "generator.retries": 0})
    try:
        ctx, checked = engine.context("compost drainage clay soil", log=True, features={"self_check": False})
        assert checked is None
        record = _log(engine)[-1]
    finally:
        engine.close()
    (note,) = [n for n in ctx.notes if "summary generator failed" in n]
    assert note in ctx.result.trace.notes and note in record["notes"]
    assert {"context", "summarize", "dense", "total"} <= set(record["stages_ms"])


# -- 6. the citation ids of an answer -------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "ids"),
    [
        ("Compost helps [1].", [1]),
        ("Both [2][3], and again [1, 3].", [1, 2, 3]),
        ("No citations here.", []),
        ("Index it as `ranks[0]` or x[1]; see [4].", [4]),
        ("```python\nvalues[2]\n```\nSee [ 5 ].", [5]),
    ],
)
def test_cited_ids(answer, ids):
    assert cited_ids(answer) == ids


# -- 7. summaries of a mixed topic: sentences and signatures alike ---------------------------------

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
    result = _result(
        "how is the configuration loaded",
        _sc(1, CODE, path="config.py", code=True),
        _sc(2, PROSE, path="config.md"),
    )
    cfg = Settings().with_overrides({"context.summary_sentences": 4, "context.summary_max_tokens": 200})
    (topic,) = ContextBuilder(cfg.context, EMBED).build(result.query, result).clusters
    assert "`def load_config(path)`" in topic.summary and "`class ConfigCache`" in topic.summary
    assert "The configuration is read from a YAML file." in topic.summary
    assert "read(path)" not in topic.summary


# -- 8. and 9. the self-check on a raw query; its timings ---------------------------------------------


def test_query_runs_the_self_check_only_when_the_call_asks_for_it(engine, corpus):
    engine.ingest([corpus])
    assert engine.settings.features.self_check  # on by default, for context and ask
    plain = engine.query("world cup 1998 final", log=True)
    assert not any(n.startswith("self-check") for n in plain.trace.notes)
    checked = engine.query("world cup 1998 final", log=True, features={"self_check": True})
    assert any(n.startswith("self-check") for n in checked.trace.notes)
    assert any(t.stage == "self_check" for t in checked.trace.timings)
    before, after = _log(engine)[-2:]
    assert "attempts" not in before and "confidence" not in before
    assert after["weak"] is True and after["retried"] is True and len(after["attempts"]) >= 2
    assert all(a["stages_ms"] for a in after["attempts"])


def test_the_kept_retrys_own_reformulation_time_is_in_the_trace():
    weak = ("unrelated words", "nothing relevant", "other matters")
    calls: list[str] = []

    def retrieve(q: str) -> QueryResult:
        calls.append(q)
        if len(calls) == 2:
            return _result(q, _sc(9, "turbine blade cooling", 0.9, 0.8), _sc(8, "other", 0.2, 0.1))
        return _result(q, *(_sc(i, t, 0.5, 0.05) for i, t in enumerate(weak, 1)))

    checked = SelfCheck(Settings().context, retrieve).run("how are turbine blades cooled")
    assert len(checked.attempts) == 2 and checked.confidence == checked.attempts[1].confidence
    stages = [t.stage for t in checked.result.trace.timings]
    assert stages.count("reformulate") == 1 and stages.count("self_check") == 1
    assert checked.result.trace.total_seconds == pytest.approx(sum(a.seconds for a in checked.attempts))
    assert set(checked.attempts[1].to_dict()["stages_ms"]) == {"reformulate", "dense"}


# -- 10. exact prose, the most important note, CRLF and no final newline -----------------------------


def test_prose_quotes_keep_trailing_whitespace_and_show_an_empty_line_as_a_bare_marker():
    text = "keep the trailing spaces   \n\nand the tab after this\t"
    result = _result("trailing spaces tab", _sc(1, text))
    ctx = ContextBuilder(Settings().context, EMBED).build(result.query, result, 3000)
    (q,) = ctx.quotes
    assert q.text == text
    assert "\n> keep the trailing spaces   \n>\n> and the tab after this\t\n" in ctx.render()


@pytest.mark.parametrize("budget", range(12, 24))
def test_with_no_results_a_tiny_budget_keeps_the_no_results_note(budget):
    empty = QueryResult("anything at all", "hybrid", (), Trace())
    ctx = ContextBuilder(Settings().context, EMBED).build(empty.query, empty, budget)
    assert ctx.token_count == count_tokens(ctx.render()) <= budget
    assert "no results were retrieved" in ctx.notes
    if ctx.render():
        assert "Note: no results were retrieved" in ctx.render()
    if budget >= 16:
        assert ctx.render()


def test_files_with_crlf_endings_or_no_final_newline_are_quoted_line_for_line(engine, tmp_path):
    root = tmp_path / "endings"
    root.mkdir()
    crlf = "# Windows notes\r\n\r\nThe kettle boils water quickly.\r\nTea steeps for three minutes.\r\n"
    bare = "# Last notes\n\nCoffee brews for four minutes.\nEspresso takes thirty seconds."
    (root / "crlf.md").write_bytes(crlf.encode())
    (root / "bare.md").write_bytes(bare.encode())
    engine.ingest([root])
    seen = set()
    for query in ("kettle tea steeps minutes", "coffee espresso seconds"):
        ctx, _ = engine.context(query, max_tokens=400)
        for q in ctx.quotes:
            lines = Path(q.path).read_bytes().decode().replace("\r\n", "\n").split("\n")
            assert q.text == "\n".join(lines[q.start_line - 1 : q.end_line]) and "\r" not in q.text
            seen.add((Path(q.path).name, q.end_line))
    assert ("crlf.md", 4) in seen and ("bare.md", 4) in seen  # the last line of each file
