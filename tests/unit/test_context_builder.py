"""ContextBuilder: exact citations against files on disk, the strict token budget, topics, degradation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from context_cases import EMBED, REACTOR, VIOLIN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_rag.context import ContextBuilder, build_prompt
from hybrid_rag.context import evidence as ev
from hybrid_rag.errors import ConfigError, InputError
from hybrid_rag.lang.windows import best_window
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import ContextSettings, Settings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, Trace

PY_SOURCE = '''"""Helpers for reading configuration files."""

import json
from pathlib import Path


def load_config(path: Path) -> dict:
    """Read a JSON configuration file and return its settings."""
    with path.open() as fh:
        return json.load(fh)


def save_config(path: Path, data: dict) -> None:
    """Write settings back as JSON."""
    path.write_text(json.dumps(data, indent=2))


class ConfigCache:
    """Keeps loaded configuration files in memory."""

    def __init__(self) -> None:
        self.items: dict[str, dict] = {}

    def get(self, path: Path) -> dict:
        if str(path) not in self.items:
            self.items[str(path)] = load_config(path)
        return self.items[str(path)]
'''

MD_SOURCE = """# Configuration

The engine reads its configuration from a YAML file.
Every key is optional and has a default.

## Environment

Environment variables override the file, one key at a time.
They use the prefix HYBRID_RAG_ and a double underscore between section and key.

## Caching

Loaded configuration files are cached in memory for the life of the process.
"""


def _chunk(cid: int, path: Path, lines: list[str], start: int, end: int, st_: SourceType, lang: str) -> Chunk:
    text = "\n".join(lines[start - 1 : end])
    return Chunk(
        cid, 1, str(path), 0, start, end, text, count_tokens(text), f"{cid:064x}", st_, lang, "default"
    )


@pytest.fixture()
def corpus(tmp_path: Path) -> QueryResult:
    """Real files on disk and overlapping chunks that point at their lines."""
    py, md = tmp_path / "config.py", tmp_path / "docs" / "config.md"
    md.parent.mkdir()
    py.write_text(PY_SOURCE)
    md.write_text(MD_SOURCE)
    files = {str(py): PY_SOURCE.split("\n"), str(md): MD_SOURCE.split("\n")}
    chunks = [
        _chunk(1, py, files[str(py)], 7, 16, SourceType.CODE, "python"),
        _chunk(2, md, files[str(md)], 1, 9, SourceType.TEXT, "markdown"),
        _chunk(3, py, files[str(py)], 14, 29, SourceType.CODE, "python"),  # overlaps chunk 1
        _chunk(4, md, files[str(md)], 7, 13, SourceType.TEXT, "markdown"),
        _chunk(5, py, files[str(py)], 1, 10, SourceType.CODE, "python"),
    ]
    scored = tuple(
        ScoredChunk(c, 1.0 / (61 + r), {"dense": 0.6 - 0.05 * r, "fusion": 1.0 / (61 + r)})
        for r, c in enumerate(chunks)
    )
    return QueryResult("how is the configuration file loaded", "hybrid", scored, Trace())


def _builder(**context: object) -> ContextBuilder:
    return ContextBuilder(
        (Settings().with_overrides({f"context.{k}": v for k, v in context.items()})).context, EMBED
    )


def _first_appearance(text: str) -> list[int]:
    seen: list[int] = []
    for m in re.finditer(r"\[(\d+)\]", text):
        if int(m.group(1)) not in seen:
            seen.append(int(m.group(1)))
    return seen


@pytest.mark.parametrize("budget", [3000, 400, 160])
def test_every_quote_is_exactly_the_cited_lines_of_the_file_on_disk(corpus, budget):
    result = corpus
    ctx = _builder().build(result.query, result, budget)
    assert ctx.quotes, "something must be quoted"
    text = ctx.render()
    for q in ctx.quotes:
        lines = Path(q.path).read_text().split("\n")
        assert q.text == "\n".join(lines[q.start_line - 1 : q.end_line])
        chunk = next(c.chunk for c in result.chunks if c.id == q.chunk_id)
        assert chunk.start_line <= q.start_line <= q.end_line <= chunk.end_line
        assert f"[{q.citation}] {q.path}:{q.start_line}-{q.end_line}\n" in text
    for s in ctx.sources:
        assert f"[{s.citation}] {s.path}:{s.start_line}-{s.end_line} (chunk {s.chunk_id})" in text
    assert [s.citation for s in ctx.sources] == list(range(1, len(ctx.sources) + 1))


def test_citation_ids_follow_first_appearance_and_code_is_fenced_text_quoted(corpus):
    result = corpus
    ctx = _builder().build(result.query, result, 3000)
    text = ctx.render()
    assert _first_appearance(text) == list(range(1, len(ctx.quotes) + 1))
    for q in ctx.quotes:
        first_line = q.text.split("\n")[0]
        if q.source_type is SourceType.CODE:
            assert f"{q.ref}\n```python\n{first_line}\n" in text
        else:
            assert f"{q.ref}\n> {first_line}".rstrip() in text
    assert text.rstrip().split("\n")[-1].startswith(f"[{len(ctx.sources)}] ")
    json.dumps(ctx.to_dict())


def test_quotes_of_one_file_never_overlap(corpus):
    result = corpus
    ctx = _builder().build(result.query, result, 3000)
    by_path: dict[str, set[int]] = {}
    for q in ctx.quotes:
        lines = set(range(q.start_line, q.end_line + 1))
        assert not lines & by_path.get(q.path, set()), f"{q.ref} overlaps another quote"
        by_path.setdefault(q.path, set()).update(lines)


def test_a_tight_budget_quotes_the_relevant_lines_not_the_whole_chunk(tmp_path):
    lines = [f"filler line number {i} about nothing in particular" for i in range(1, 61)]
    lines[37] = "the zebra migration route crosses the river"
    path = tmp_path / "notes.txt"
    path.write_text("\n".join(lines))
    chunk = _chunk(7, path, lines, 1, 60, SourceType.TEXT, "text")
    result = QueryResult(
        "zebra migration river", "hybrid", (ScoredChunk(chunk, 1.0, {"dense": 0.5}),), Trace()
    )
    ctx = _builder(quote_max_tokens=60).build(result.query, result, 200)
    (q,) = ctx.quotes
    assert q.start_line <= 38 <= q.end_line
    assert q.end_line - q.start_line + 1 < 60
    assert q.text == "\n".join(lines[q.start_line - 1 : q.end_line])
    assert ctx.token_count <= 200


def _topic_result() -> QueryResult:
    a, b = REACTOR, VIOLIN
    texts = [a, a + " alpha", a + " beta", b, b + " violin", b + " melody"]
    chunks = [
        Chunk(
            i + 1,
            i + 1,
            f"doc{i}.txt",
            0,
            1,
            1,
            t,
            count_tokens(t),
            f"{i:064x}",
            SourceType.TEXT,
            "text",
            "d",
        )
        for i, t in enumerate(texts)
    ]
    scored = tuple(ScoredChunk(c, 1.0 - 0.1 * r, {}) for r, c in enumerate(chunks))
    return QueryResult("reactor coolant and violin sonata", "hybrid", scored, Trace())


def test_each_topic_gets_a_quote_before_any_topic_gets_a_second():
    result = _topic_result()
    builder = _builder(summary_max_tokens=5)
    full = builder.build(result.query, result, 3000)
    assert len(full.clusters) == 2 and len(full.quotes) == 6
    tight = builder.build(result.query, result, full.token_count - 60)
    assert 2 <= len(tight.quotes) < 6
    assert {q.topic for q in tight.quotes} == {1, 2}
    assert tight.quotes[0].chunk_id == 1  # the best hit's topic comes first
    assert any(q.chunk_id == 4 for q in tight.quotes)  # the other topic's best hit beat chunk 2 and 3


def test_clustering_is_deterministic_under_a_seed():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((40, 16))
    first = ev.cluster_labels(vectors, 4, seed=7)
    assert np.array_equal(first, ev.cluster_labels(vectors, 4, seed=7))
    assert first[0] == 0 and set(first.tolist()) == {0, 1, 2, 3}
    result = _topic_result()
    a = _builder(seed=11).build(result.query, result)
    b = _builder(seed=11).build(result.query, result)
    assert a == b


@pytest.mark.parametrize(("n", "k"), [(0, 0), (1, 1), (3, 1), (4, 1), (10, 2), (30, 4), (50, 5), (500, 6)])
def test_cluster_count_rule(n, k):
    assert ev.cluster_count(n, max_clusters=6) == k


def test_identical_rows_make_one_topic():
    assert ev.cluster_labels(np.ones((8, 4)), 3, seed=0).tolist() == [0] * 8


def test_best_window_respects_cap_blocked_lines_and_trims_blanks():
    scores = [0.0, 0.1, 0.9, 0.0, 0.5, 0.0]
    costs = [1, 5, 5, 1, 5, 1]
    assert best_window(scores, costs, 100) == (1, 4)
    assert best_window(scores, costs, 5) == (2, 2)
    assert best_window(scores, costs, 4) is None
    assert best_window(scores, costs, 100, blocked=[False, False, True, False, False, False]) == (4, 4)


def test_prose_units_join_wrapped_lines_into_sentences():
    lines = ["# Title", "First sentence runs", "over two lines. Second one.", "", "- item"]
    units = ev.prose_units(0, lines)
    assert [(u.first, u.last, u.text) for u in units] == [
        (0, 0, "# Title"),
        (1, 2, "First sentence runs over two lines."),
        (2, 2, "Second one."),
        (4, 4, "- item"),
    ]


def test_empty_result_and_tiny_budgets_degrade_with_a_note(corpus):
    result = corpus
    builder = _builder()
    empty = builder.build("anything", QueryResult("anything", "hybrid", (), Trace()), 100)
    assert empty.quotes == () and "no results were retrieved" in empty.render()
    small = builder.build(result.query, result, 45)
    assert small.quotes == () and small.token_count <= 45
    assert any("budget" in n for n in small.notes)
    nothing = builder.build(result.query, result, 1)
    assert nothing.render() == "" and nothing.token_count == 0 and nothing.notes
    with pytest.raises(InputError):
        builder.build(result.query, result, 0)


def test_summaries_are_dropped_before_quotes_and_it_is_said(corpus):
    result = corpus
    builder = _builder(summary_max_tokens=60, summary_sentences=3)
    full = builder.build(result.query, result, 3000)
    assert all(t.summary for t in full.clusters)
    budgets = range(full.token_count, 40, -10)
    squeezed = [builder.build(result.query, result, b) for b in budgets]
    dropped = [c for c in squeezed if c.quotes and not all(t.summary for t in c.clusters)]
    assert dropped, "some budget keeps quotes but not every summary"
    assert any("summaries" in n for n in dropped[0].notes)  # the largest such budget: in full
    for c in dropped:  # smaller ones: said, or every note of the fill gone for the quotes' room
        assert any("summar" in n for n in c.notes) or not any("budget" in n for n in c.notes), c.notes


class _Gen:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        self.calls += 1
        if self.fail:
            raise ConnectionError("server down")
        return f"Generated summary number {self.calls}.\n"


def test_generator_summaries_map_each_chunk_then_reduce_each_topic_and_a_failure_falls_back():
    result = _topic_result()  # two topics of three chunks
    good = _Gen()
    ctx = ContextBuilder(Settings().context, EMBED, good).build(result.query, result)
    assert good.calls == 2 * (3 + 1)  # a map call a chunk, a reduce call a topic
    assert [t.summary for t in ctx.clusters] == ["Generated summary number 4.", "Generated summary number 8."]
    bad = _Gen(fail=True)
    fallback = ContextBuilder(Settings().context, EMBED, bad).build(result.query, result)
    assert bad.calls == 1  # not asked again in the same build after failing
    extractive = ContextBuilder(Settings().context, EMBED).build(result.query, result)
    assert [t.summary for t in fallback.clusters] == [t.summary for t in extractive.clusters]
    assert any("generator failed" in n and "ConnectionError" in n for n in fallback.notes)
    assert "generator failed" in fallback.render()


# -- the budget, as a property -------------------------------------------------------------------

_LINE = st.text(alphabet=st.sampled_from([*"abcdefgh xyz_().:{}`#-\t", "é", "語", "\u2028"]), max_size=60)


@st.composite
def _results(draw: st.DrawFn) -> QueryResult:
    n = draw(st.integers(0, 9))
    chunks = []
    for i in range(n):
        lines = draw(st.lists(_LINE, min_size=1, max_size=25))
        code = draw(st.booleans())
        start = draw(st.integers(1, 500))
        text = "\n".join(lines)
        chunks.append(
            ScoredChunk(
                Chunk(
                    i + 1,
                    i + 1,
                    f"f{i % 3}.py",
                    i,
                    start,
                    start + len(lines) - 1,
                    text,
                    1,
                    f"{i:064x}",
                    SourceType.CODE if code else SourceType.TEXT,
                    "python" if code else "text",
                    "d",
                ),
                draw(st.floats(-1, 1)),
                {"dense": draw(st.floats(-1, 1))} if draw(st.booleans()) else {},
            )
        )
    return QueryResult("query", "hybrid", tuple(chunks), Trace())


_PROPERTY_BUILDER = ContextBuilder(Settings().context, FakeEmbedder(dimension=16).embed_passages)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result=_results(), budget=st.integers(1, 4000), query=st.text(max_size=40))
def test_render_never_exceeds_the_budget(result, budget, query):
    ctx = _PROPERTY_BUILDER.build(query, result, budget)
    text = ctx.render()
    assert count_tokens(text) == ctx.token_count <= budget
    for q in ctx.quotes:
        chunk = next(c.chunk for c in result.chunks if c.id == q.chunk_id)
        lines = chunk.text.split("\n")
        assert q.text == "\n".join(lines[q.start_line - chunk.start_line : q.end_line - chunk.start_line + 1])
    assert [s.citation for s in ctx.sources] == list(range(1, len(ctx.quotes) + 1))


# -- the prompt ------------------------------------------------------------------------------------


def test_prompt_holds_the_context_and_the_question_and_the_rules(corpus):
    result = corpus
    ctx = _builder().build(result.query, result, 1000)
    system, user = build_prompt("How is a config loaded?", ctx)
    assert ctx.render().rstrip("\n") in user and user.rstrip().endswith("say that it does not.")
    assert "How is a config loaded?" in user
    assert "[1]" in system and "does not contain" in system


def test_prompt_template_is_configurable_and_validated():
    cfg = ContextSettings(prompt_template="Q: {question}\nC: {context}", system_prompt="S")
    assert build_prompt("why?", "ctx {braces}", cfg) == ("S", "Q: why?\nC: ctx {braces}")
    with pytest.raises(ConfigError, match="unknown field"):
        build_prompt("q", "c", ContextSettings(prompt_template="{context} {answer}"))
    with pytest.raises(ConfigError, match=r"\{context\}"):
        build_prompt("q", "c", ContextSettings(prompt_template="{question}"))


class _CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(dimension=8)
        self.seen: list[str] = []

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().embed_passages(texts)


def test_cached_embed_reads_stored_chunk_vectors_and_embeds_only_the_rest(tmp_path):
    import hashlib

    from hybrid_rag.context import cached_embed
    from hybrid_rag.store import MetadataStore

    embedder = _CountingEmbedder()
    store = MetadataStore(tmp_path / "store.sqlite3")
    stored = np.eye(8, dtype=np.float32)[3]  # a unit vector, as the store keeps them
    store.put_embeddings(embedder.model_name, {hashlib.sha256(b"known chunk").hexdigest(): stored})
    try:
        vectors = cached_embed(embedder, store)(["known chunk", "a new sentence"])
    finally:
        store.close()
    assert embedder.seen == ["a new sentence"]
    assert np.array_equal(vectors[0], stored)
    assert np.allclose(vectors[1], FakeEmbedder(dimension=8).embed_passages(["a new sentence"])[0])
    assert cached_embed(embedder, MetadataStore(tmp_path / "absent.sqlite3"))([]).shape == (0, 8)
