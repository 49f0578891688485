"""A quote is the cited lines exactly: through the real ingest path (chunks that start deep in a
file), offset by the chunk start, CRLF and no final newline, trailing whitespace and empty lines,
over-long lines cut into marked pieces, code fragments marked inside their fence, never a bare
heading."""

from __future__ import annotations

from pathlib import Path

import pytest
from context_cases import EMBED, ingested, query_result, scored_chunk
from fake_settings import fake_settings

from hybrid_rag.context import ContextBuilder, fragment_cuts
from hybrid_rag.context import evidence as ev
from hybrid_rag.context.render import Quote, Topic, render_context
from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings
from hybrid_rag.types import ScoredChunk, SourceType

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
    cfg = fake_settings(tmp_path / "data", {"chunking.min_tokens": 40, "chunking.max_tokens": 80})
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


def test_a_heading_scores_nothing_so_a_quote_never_is_or_starts_with_a_bare_heading():
    lines = ["# Reciprocal rank fusion", "", "Fusion adds one over k plus the rank for each list."]
    units = ev.prose_units(0, lines)
    assert [u.heading for u in units] == [True, False]
    scores = ev.line_scores(3, lines, [(u, 0.9) for u in units])
    assert scores[0] == 0.0 and scores[2] > 0
    text = "\n".join(lines)
    result = query_result("reciprocal rank fusion", scored_chunk(1, text, path="fusion.md"))
    quoted = []
    for budget in range(40, 160, 4):
        ctx = ContextBuilder(Settings().context, EMBED).build(result.query, result, budget)
        assert ctx.token_count <= budget
        quoted += [q.text for q in ctx.quotes]
    assert quoted and set(quoted) == {lines[2]}


LONG_LINE = " ".join(
    [*(f"word{i}" for i in range(70)), "zebra giraffe savanna", *(f"term{i}" for i in range(70))]
)


@pytest.fixture()
def long_line_engine(tmp_path: Path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "notes.txt").write_text(f"A short first line about animals.\n{LONG_LINE}\nA short last line.\n")
    engine = ingested(tmp_path, root, **{"chunking.min_tokens": 10, "chunking.max_tokens": 40})
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


def test_prose_quotes_keep_trailing_whitespace_and_show_an_empty_line_as_a_bare_marker():
    text = "keep the trailing spaces   \n\nand the tab after this\t"
    result = query_result("trailing spaces tab", scored_chunk(1, text))
    ctx = ContextBuilder(Settings().context, EMBED).build(result.query, result, 3000)
    (q,) = ctx.quotes
    assert q.text == text
    assert "\n> keep the trailing spaces   \n>\n> and the tab after this\t\n" in ctx.render()


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
        ctx, _ = engine.context(query, max_tokens=400, absolute_paths=True)
        for q in ctx.quotes:
            lines = Path(q.path).read_bytes().decode().replace("\r\n", "\n").split("\n")
            assert q.text == "\n".join(lines[q.start_line - 1 : q.end_line]) and "\r" not in q.text
            seen.add((Path(q.path).name, q.end_line))
    assert ("crlf.md", 4) in seen and ("bare.md", 4) in seen  # the last line of each file
