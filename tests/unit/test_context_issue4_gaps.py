"""Issue 4's test list, where the unit tests left room: citations through the real ingest path
(chunks that start deep in a file), the retry limit when reformulations never run out, seeds that
are really used and the same in every process, the budget under any context settings and a
chatty generator, and a failing generator seen end to end (trace, context notes, query log)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_rag.context import ContextBuilder
from hybrid_rag.context import evidence as ev
from hybrid_rag.embedders import FakeEmbedder
from hybrid_rag.engine import Engine
from hybrid_rag.retrieval.selfcheck import SelfCheck
from hybrid_rag.settings import Settings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, StageTiming, Trace

ROOT = Path(__file__).resolve().parents[2]

# -- every citation matches the file on disk, through ingest, chunking and retrieval ---------------

_TOPICS = [
    ("turbine", "blade", "cooling", "film", "holes"),
    ("boundary", "layer", "transition", "laminar", "flow"),
    ("compost", "drainage", "clay", "soil", "worms"),
    ("parser", "filter", "expression", "token", "grammar"),
    ("reactor", "coolant", "pressure", "valve", "pump"),
    ("violin", "sonata", "tempo", "melody", "rhythm"),
]


def _python_file() -> str:
    parts = ['"""Many small functions, so that chunks start deep in the file."""', "", "import math", ""]
    for n, words in enumerate(_TOPICS * 2):
        name = "_".join(words[:2]) + f"_{n}"
        parts += [
            "",
            f"def {name}(x: float) -> float:",
            f'    """Compute the {" ".join(words)} value number {n}."""',
            f"    {words[0]} = math.sqrt(abs(x)) + {n}",
            f"    {words[1]} = {words[0]} * 2  # {words[2]} {words[3]}",
            f"    return {words[1]} - {words[0]}",
            "",
        ]
    return "\n".join(parts) + "\n"


def _markdown_file() -> str:
    parts = ["# Notes", ""]
    for n, words in enumerate(_TOPICS * 2):
        parts += [
            f"## Section {n}: {words[0]} and {words[1]}",
            "",
            f"The {words[0]} {words[1]} depends on {words[2]}. It was measured {n} times",
            f"with {words[3]} and {words[4]} in the loop. Nothing else about {words[0]} is known.",
            "",
        ]
    return "\n".join(parts)


@pytest.fixture()
def deep_corpus(tmp_path: Path) -> tuple[Engine, Path]:
    root = tmp_path / "corpus"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "physics.py").write_text(_python_file())
    (root / "docs" / "notes.md").write_text(_markdown_file())
    cfg = Settings().with_overrides(
        {
            "paths.data_dir": str(tmp_path / "data"),
            "embedding.model": "fake",
            "chunking.min_tokens": 40,
            "chunking.max_tokens": 80,
        }
    )
    engine = Engine(cfg)
    engine.ingest([root])
    yield engine, root
    engine.close()


def _on_disk(path: str, root: Path) -> list[str]:
    p = Path(path)
    return (p if p.is_absolute() else root / p).read_text().split("\n")


@pytest.mark.parametrize("budget", [3000, 600, 250])
def test_citations_from_an_ingested_corpus_are_exact_lines_of_the_files_on_disk(deep_corpus, budget):
    engine, root = deep_corpus
    deep = 0
    for query in ("how is turbine blade cooling computed", "compost drainage in clay soil", "violin tempo"):
        ctx, _ = engine.context(query, max_tokens=budget, top_k=8)
        assert ctx.quotes and ctx.token_count <= budget
        text = ctx.render()
        for q in ctx.quotes:
            lines = _on_disk(q.path, root)
            assert q.text == "\n".join(lines[q.start_line - 1 : q.end_line]), q.ref
            assert f"[{q.citation}] {q.ref}\n" in text
            deep += q.start_line > 10
        for s in ctx.sources:
            assert f"[{s.citation}] {s.path}:{s.start_line}-{s.end_line} (chunk {s.chunk_id})" in text
    assert deep, "no quote started past line 10: the corpus does not exercise line offsets"


def test_a_quote_inside_a_chunk_is_offset_by_the_chunk_start(deep_corpus):
    """A tight quote cut out of a chunk that starts deep in the file: both offsets must add up."""
    engine, root = deep_corpus
    ctx, _ = engine.context("violin sonata tempo melody rhythm", max_tokens=400, top_k=8)
    inner = [
        q
        for q in ctx.quotes
        for c in [engine.store.chunks([q.chunk_id])[q.chunk_id]]
        if c.start_line > 1 and q.start_line > c.start_line
    ]
    assert inner, "expected a quote that starts after its chunk's first line"
    for q in inner:
        assert q.text == "\n".join(_on_disk(q.path, root)[q.start_line - 1 : q.end_line])


# -- the self-check stops after two more tries, whatever is left to try --------------------------


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


# -- clustering: the seed is used, and it gives one answer in every process -------------------------


def test_the_seed_is_really_passed_to_kmeans():
    vectors = np.random.default_rng(5).standard_normal((40, 16))
    labelings = {tuple(ev.cluster_labels(vectors, 4, seed=s).tolist()) for s in range(8)}
    assert len(labelings) > 1, "eight seeds, one labelling of noise: the seed is ignored"


_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from hybrid_rag.context import ContextBuilder, evidence as ev
    from hybrid_rag.embedders import FakeEmbedder
    from hybrid_rag.settings import Settings
    from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, Trace
    words = "reactor coolant pressure valve violin sonata melody tempo soil compost clay worms".split()
    rng = np.random.default_rng(1)
    chunks = []
    for i in range(24):
        text = " ".join(rng.choice(words, 6))
        chunks.append(ScoredChunk(Chunk(i + 1, i + 1, f"f{i}.txt", 0, 1, 1, text, 6, f"{i:064x}",
                                        SourceType.TEXT, "text", "c"), 1.0 - i / 100, {}))
    result = QueryResult("reactor coolant and violin tempo", "hybrid", tuple(chunks), Trace())
    cfg = Settings().with_overrides({"context.seed": 13})
    ctx = ContextBuilder(cfg.context, FakeEmbedder(dimension=24).embed_passages).build(result.query, result)
    labels = ev.cluster_labels(np.random.default_rng(2).standard_normal((30, 8)), 4, seed=13)
    print(json.dumps({"context": ctx.to_dict(), "labels": labels.tolist()}, sort_keys=True))
    """
)


def test_clustering_and_the_context_are_the_same_in_every_process():
    outputs = []
    for hash_seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _SUBPROCESS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    assert len(outputs[0]["context"]["clusters"]) > 1
    assert outputs[0] == outputs[1] == outputs[2]


# -- the budget, under any context settings and a generator that writes too much -------------------


class _Chatty:
    def __init__(self, text: str, fail: bool) -> None:
        self.text, self.fail = text, fail

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        if self.fail:
            raise ConnectionError("down")
        return self.text


_WORDS = st.sampled_from(["alpha", "beta", "def", "class", "x()", "é", "語", "{", "#", "-", ".", "\t", "  "])
_LINES = st.lists(st.lists(_WORDS, max_size=14).map(" ".join), min_size=1, max_size=20)


@st.composite
def _case(draw: st.DrawFn) -> tuple[ContextBuilder, QueryResult, int]:
    overrides = {
        "context.quote_max_tokens": draw(st.integers(1, 500)),
        "context.summary_max_tokens": draw(st.integers(1, 120)),
        "context.summary_sentences": draw(st.integers(1, 4)),
        "context.max_clusters": draw(st.integers(1, 8)),
        "context.max_embedded_units": draw(st.integers(1, 64)),
        "context.seed": draw(st.integers(0, 2**16)),
    }
    generator = None
    if draw(st.booleans()):
        generator = _Chatty(" ".join(draw(st.lists(_WORDS, max_size=400))), draw(st.booleans()))
    builder = ContextBuilder(
        (Settings().with_overrides(overrides)).context, FakeEmbedder(dimension=12).embed_passages, generator
    )
    chunks = []
    for i in range(draw(st.integers(0, 12))):
        lines = draw(_LINES)
        start = draw(st.integers(1, 300))
        code = draw(st.booleans())
        chunks.append(
            ScoredChunk(
                Chunk(
                    i + 1,
                    i + 1,
                    f"f{i % 4}.py",
                    i,
                    start,
                    start + len(lines) - 1,
                    "\n".join(lines),
                    1,
                    f"{i:064x}",
                    SourceType.CODE if code else SourceType.TEXT,
                    "python" if code else "text",
                    "d",
                ),
                draw(st.floats(0, 1)),
                {"dense": draw(st.floats(-1, 1))},
            )
        )
    result = QueryResult("alpha beta", "hybrid", tuple(chunks), Trace())
    return builder, result, draw(st.integers(1, 3000))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case(), query=st.text(max_size=30))
def test_budget_holds_under_any_context_settings_and_any_generator(case, query):
    builder, result, budget = case
    ctx = builder.build(query, result, budget)
    assert count_tokens(ctx.render()) == ctx.token_count <= budget
    for q in ctx.quotes:  # quotes stay exact lines of their chunk, whatever the settings
        chunk = next(c.chunk for c in result.chunks if c.id == q.chunk_id)
        lines = chunk.text.split("\n")
        assert q.text == "\n".join(lines[q.start_line - chunk.start_line : q.end_line - chunk.start_line + 1])
    for t in ctx.clusters:
        assert count_tokens(t.summary) <= builder.cfg.summary_max_tokens


# -- a failing generator, end to end: offline path, a note in the trace, the context and the log --


def test_a_failing_generator_degrades_end_to_end_with_notes_in_trace_context_and_log(tmp_path, corpus):
    cfg = Settings().with_overrides(
        {
            "paths.data_dir": str(tmp_path / "data"),
            "embedding.model": "fake",
            "generator.base_url": "http://127.0.0.1:9/v1",  # discard port: nothing listens
            "generator.retries": 0,
            "generator.timeout_seconds": 2,
        }
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


def _two_topics() -> QueryResult:
    a = "alpha beta gamma delta reactor coolant pressure valve"
    b = "violin sonata orchestra concerto melody rhythm tempo"
    texts = [a, a + " alpha", b, b + " violin"]
    return QueryResult(
        "reactor coolant and violin sonata",
        "hybrid",
        tuple(
            ScoredChunk(
                Chunk(i + 1, i + 1, f"doc{i}.txt", 0, 1, 1, t, 8, f"{i:064x}", SourceType.TEXT, "text", "d"),
                1.0 - 0.1 * i,
                {},
            )
            for i, t in enumerate(texts)
        ),
        Trace(),
    )


@pytest.mark.parametrize("words", range(1, 40))
def test_a_summary_is_kept_whole_when_it_fits_and_cut_between_words_when_it_does_not(words):
    limit = 12
    reply = " ".join(f"word{n}" for n in range(words))
    cfg = Settings().with_overrides({"context.summary_max_tokens": limit})
    ctx = ContextBuilder(
        cfg.context, FakeEmbedder(dimension=16).embed_passages, _Chatty(reply, fail=False)
    ).build("reactor coolant and violin sonata", _two_topics(), 3000)
    summaries = [t.summary for t in ctx.clusters]
    assert summaries, "every topic should be shown within 3000 tokens"
    for summary in summaries:
        if count_tokens(reply) <= limit:
            assert summary == reply
        else:
            assert count_tokens(summary) <= limit
            assert summary.endswith(" …") and reply.startswith(summary[:-2])
