"""Line-exact, token-bounded chunks; definitions kept whole; headings preferred."""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_rag.code.cuts import heuristic_cuts, python_cuts
from hybrid_rag.ingest.chunking import (
    HEADING,
    LINE,
    PARAGRAPH,
    chunk_file,
    chunk_text,
    plan_ranges,
    split_lines,
    text_priorities,
)
from hybrid_rag.ingest.loaders import load_text
from hybrid_rag.settings import ChunkingSettings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import ChunkSpan, SourceType

CODE, TEXT = SourceType.CODE, SourceType.TEXT
DEFAULT = ChunkingSettings()
_VOCABULARY = (
    "retrieval index vector query token chunk fusion rerank score model search engine data file "
    "local hybrid dense sparse lexical passage context answer cite line number overlap"
)
WORDS = _VOCABULARY.split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def check_spans(text: str, spans: list[ChunkSpan], cfg: ChunkingSettings) -> None:
    """The invariants every chunking must keep."""
    lines = split_lines(text)
    covered: set[int] = set()
    last_end = 0
    for span in spans:
        assert 1 <= span.start_line <= span.end_line <= len(lines)
        assert span.token_count == count_tokens(span.text)
        assert span.token_count <= cfg.max_tokens
        assert span.sha256 == hashlib.sha256(span.text.encode("utf-8")).hexdigest()
        assert span.text.strip()
        whole = "\n".join(lines[span.start_line - 1 : span.end_line])
        if span.text != whole:  # a piece of one over-long line
            assert span.start_line == span.end_line
            assert span.text in whole
            assert count_tokens(whole) > cfg.max_tokens
        else:
            assert lines[span.start_line - 1].strip() and lines[span.end_line - 1].strip()
            assert span.end_line > last_end  # progress: never inside the previous chunk
            last_end = span.end_line
        covered.update(range(span.start_line, span.end_line + 1))
    assert [s.start_line for s in spans] == sorted(s.start_line for s in spans)
    missing = [i for i, line in enumerate(lines, 1) if line.strip() and i not in covered]
    assert not missing


# --- properties -----------------------------------------------------------------------------

A_LINE = st.one_of(
    st.just(""),
    st.just("    "),
    st.text(alphabet=st.sampled_from("abc xyz_(){}:#=-é中😀\t"), max_size=40),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join),
    st.lists(
        st.sampled_from([*WORDS, "😀", "中文", ",", "=", "def", "class"]), min_size=40, max_size=400
    ).map("".join),  # long lines, often over max_tokens
    st.sampled_from(["def f(x):", "class K:", "    return x", "## Heading", "```", "function g() {", "}"]),
)
KINDS = st.sampled_from([(TEXT, "text"), (TEXT, "markdown"), (TEXT, "rst"), (CODE, "python"), (CODE, "go")])


@st.composite
def chunk_settings(draw: st.DrawFn) -> ChunkingSettings:
    min_tokens = draw(st.integers(5, 60))
    max_tokens = min_tokens + draw(st.integers(0, 80))
    overlap = draw(st.sampled_from([0.0, 0.15, 0.3, 0.45]))
    return ChunkingSettings(min_tokens=min_tokens, max_tokens=max_tokens, overlap=overlap)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(A_LINE, max_size=120), kind=KINDS, cfg=chunk_settings())
def test_every_chunk_is_exactly_its_lines(
    lines: list[str], kind: tuple[SourceType, str], cfg: ChunkingSettings
) -> None:
    text = "\n".join(lines)
    spans = chunk_text(text, kind[0], kind[1], cfg)
    check_spans(text, spans, cfg)
    assert spans == chunk_text(text, kind[0], kind[1], cfg)  # deterministic


@pytest.mark.parametrize("source_type", list(SourceType))
def test_a_line_that_fits_only_with_its_newline_is_still_cut_to_the_budget(source_type: SourceType) -> None:
    """BPE is not monotonic: ``':::\t:}})'`` is 5 tokens with its newline and 6 without, so a
    one-line chunk of it would overrun ``max_tokens`` 5 (found by the fuzz profile of CI)."""
    text = ":::\t:}})"
    cfg = ChunkingSettings(min_tokens=5, max_tokens=5, overlap=0.0)
    spans = chunk_text(text, source_type, "python", cfg)
    check_spans(text, spans, cfg)
    assert "".join(s.text for s in spans) == text


@settings(max_examples=60, deadline=None)
@given(n_lines=st.integers(1, 400), seed=st.integers(0, 10_000))
def test_many_short_lines(n_lines: int, seed: int) -> None:
    rng = random.Random(seed)
    text = "\n".join(sentence(rng, rng.randint(0, 3)) for _ in range(n_lines))
    cfg = ChunkingSettings(min_tokens=20, max_tokens=40)
    check_spans(text, chunk_text(text, TEXT, "text", cfg), cfg)


# --- sizes, overlap, tails ------------------------------------------------------------------


def paragraphs(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return "\n\n".join(
        "\n".join(sentence(rng, rng.randint(6, 16)) for _ in range(rng.randint(2, 6))) for _ in range(n)
    )


def test_blank_text_has_no_chunks() -> None:
    assert chunk_text("", TEXT, "text", DEFAULT) == []
    assert chunk_text(" \n\n\t\n", CODE, "python", DEFAULT) == []


def test_a_file_shorter_than_min_tokens_is_one_chunk() -> None:
    text = "\n\nfirst line\n\nsecond line\n\n"
    spans = chunk_text(text, TEXT, "text", DEFAULT)
    assert [(s.start_line, s.end_line, s.text) for s in spans] == [(3, 5, "first line\n\nsecond line")]


def test_chunks_stay_between_min_and_max_tokens() -> None:
    text = paragraphs(1, 120)
    spans = chunk_text(text, TEXT, "text", DEFAULT)
    check_spans(text, spans, DEFAULT)
    assert len(spans) >= 5
    assert all(s.token_count >= DEFAULT.min_tokens * 0.95 for s in spans[:-1])


def test_consecutive_text_chunks_overlap_by_about_the_overlap_share() -> None:
    text = paragraphs(2, 120)
    lines = split_lines(text)
    spans = chunk_text(text, TEXT, "text", DEFAULT)
    for prev, nxt in itertools.pairwise(spans):
        assert nxt.start_line <= prev.end_line  # shares whole lines
        shared = count_tokens("\n".join(lines[nxt.start_line - 1 : prev.end_line]))
        assert 0 < shared <= 2 * DEFAULT.overlap * prev.token_count


def test_no_overlap_when_overlap_is_zero() -> None:
    cfg = ChunkingSettings(overlap=0.0)
    spans = chunk_text(paragraphs(3, 80), TEXT, "text", cfg)
    assert len(spans) > 2
    assert all(nxt.start_line > prev.end_line for prev, nxt in itertools.pairwise(spans))


def test_no_tiny_tail_chunk() -> None:
    # 10-token lines with no blank line: a greedy cut at max_tokens would leave ~30 tokens over
    rng = random.Random(4)
    text = "\n".join(sentence(rng, 9) for _ in range(83))
    cfg = ChunkingSettings(overlap=0.0)
    spans = chunk_text(text, TEXT, "text", cfg)
    check_spans(text, spans, cfg)
    assert 0 < count_tokens(text) - cfg.max_tokens < cfg.min_tokens / 4  # the setting this test is about
    assert len(spans) == 2
    assert spans[-1].token_count >= 0.9 * cfg.min_tokens / 4  # "about": the plan counts estimates


def test_plan_ranges_drops_lines_when_the_exact_count_does_not_fit() -> None:
    # the estimate says 20 one-token lines fit in one chunk; the exact check allows 3 lines
    cfg = ChunkingSettings(min_tokens=2, max_tokens=30, overlap=0.0)
    ranges = plan_ranges([1] * 20, [LINE] * 21, None, 0, 20, cfg, fits=lambda a, b: b - a <= 3)
    assert ranges == [(0, 3), (3, 6), (6, 9), (9, 12), (12, 15), (15, 18), (18, 20)]


# --- code -----------------------------------------------------------------------------------


def python_module(seed: int, n_funcs: int) -> tuple[str, list[tuple[int, int]]]:
    """A module of functions of 30-500 tokens; returns it and each function's 1-based line span."""
    rng = random.Random(seed)
    out = ['"""Module docstring."""', "", "import os", "import sys", ""]
    spans = []
    for i in range(n_funcs):
        out += ["", ""]
        start = len(out) + 1
        if i % 3 == 0:
            out.append(f"# helper {i}: {sentence(rng, 5)}")
        if i % 4 == 0:
            out.append("@functools.cache")
        out.append(f"def func_{i}(a, b):")
        out.append(f'    """{sentence(rng, 8)}"""')
        for j in range(rng.randint(2, 40 if i % 10 == 9 else 12)):
            if j % 7 == 6:
                out.append("")
            out.append(f"    x{j} = call_{j}(a, b)  # {sentence(rng, rng.randint(1, 6))}")
        out.append("    return a")
        spans.append((start, len(out)))
    return "\n".join(out) + "\n", spans


def test_python_functions_are_never_cut_when_they_fit() -> None:
    text, funcs = python_module(5, 60)
    spans = chunk_text(text, CODE, "python", DEFAULT)
    check_spans(text, spans, DEFAULT)
    lines = split_lines(text)
    for a, b in funcs:
        assert count_tokens("\n".join(lines[a - 1 : b])) <= DEFAULT.max_tokens
        assert any(s.start_line <= a and b <= s.end_line for s in spans), (a, b)
    assert len(spans) < len(funcs) / 2  # small functions are packed together
    starts = {a for a, _ in funcs}
    assert all(s.start_line in starts for s in spans[1:])  # no overlap across definitions


def test_giant_class_is_cut_before_methods_with_overlap() -> None:
    rng = random.Random(6)
    out = ["import os", "", "", "class Giant:"]
    for m in range(30):  # no blank line between methods, blank lines inside them
        out.append(f"    def method_{m}(self):")
        for j in range(rng.randint(3, 12)):
            out += [f"        v{j} = self.f({j})  # {sentence(rng, 4)}", *([""] if j % 3 == 2 else [])]
    text = "\n".join(out)
    assert count_tokens(text) > 3 * DEFAULT.max_tokens
    lines = split_lines(text)
    spans = chunk_text(text, CODE, "python", DEFAULT)
    check_spans(text, spans, DEFAULT)
    assert spans[0].start_line == 1  # the tiny import block is packed with the class start
    for prev, nxt in itertools.pairwise(spans):
        assert nxt.start_line <= prev.end_line  # inside one definition: overlap
        after = next(line for line in lines[prev.end_line :] if line.strip())
        assert after.startswith("    def method_")  # cut before a nested definition


def test_giant_function_without_blank_lines_is_cut_at_line_boundaries() -> None:
    body = [f"    total += compute(item_{i}, weight={i}, name='n{i}')" for i in range(600)]
    text = "\n".join(["def giant(items):", "    total = 0", *body, "    return total"])
    for language in ("python", "rust"):
        spans = chunk_text(text, CODE, language, DEFAULT)
        check_spans(text, spans, DEFAULT)
        assert len(spans) >= 4
        assert spans[0].start_line == 1 and spans[-1].end_line == len(body) + 3
        assert all(nxt.start_line <= prev.end_line for prev, nxt in itertools.pairwise(spans))


def test_python_syntax_error_falls_back_to_the_heuristic() -> None:
    text, funcs = python_module(7, 30)
    broken = text.replace("def func_3(a, b):", "def func_3(a, b:")
    assert python_cuts(split_lines(broken)) is None
    spans = chunk_text(broken, CODE, "python", DEFAULT)
    check_spans(broken, spans, DEFAULT)
    lines = split_lines(broken)
    fitting = [(a, b) for a, b in funcs if count_tokens("\n".join(lines[a - 1 : b])) <= DEFAULT.max_tokens]
    assert all(any(s.start_line <= a and b <= s.end_line for s in spans) for a, b in fitting)


def test_python_cuts_include_decorators_and_attached_comments() -> None:
    lines = split_lines(
        "import os\n\n# about f\n@dec\ndef f():\n    # inner\n    @staticmethod\n    def g():\n        pass\n"
        "x = [\n    1,\n]\n"
    )
    top, nested = python_cuts(lines)  # type: ignore[misc]
    assert top == {0, 2, 9}
    assert nested == {5}


def test_heuristic_cuts_for_brace_languages() -> None:
    lines = split_lines(
        'package main\n\nimport "fmt"\n\n// Add adds.\nfunc Add(a int) int {\n\treturn a\n}\n'
        "type T struct {\n\tx int\n}\n\nfunc (t T) M() {\n\tfunc() {}()\n}\n"
    )
    top, nested = heuristic_cuts(lines, "go")
    assert top == {0, 2, 4, 8, 12}  # "// Add adds." is pulled up with its func; "}" never starts a unit
    assert nested == {13}


def test_yaml_keys_are_top_level_units() -> None:
    top, _ = heuristic_cuts(split_lines("a: 1\nb:\n  c: 2\n# note\nd: 3\n"), "yaml")
    assert top == {0, 1, 3}


# --- text -----------------------------------------------------------------------------------


def test_markdown_priorities_see_headings_but_not_inside_fences() -> None:
    lines = split_lines("# Title\n\ntext\n\n```sh\n# not a heading\n\necho\n```\n\nSetext\n------\nbody")
    prio = text_priorities(lines, "markdown")
    assert prio[0] == HEADING and prio[10] == HEADING
    assert prio[2] == PARAGRAPH
    assert prio[5] < HEADING and prio[7] < PARAGRAPH


def test_rst_titles_with_overlines() -> None:
    lines = split_lines("=====\nTitle\n=====\n\nText.\n\nSection\n-------\n\nMore.")
    prio = text_priorities(lines, "rst")
    assert prio[0] == HEADING and prio[6] == HEADING
    assert prio[1] != HEADING


def test_markdown_cuts_before_headings() -> None:
    rng = random.Random(8)
    sections = [f"## Section {i}\n\n{paragraphs(rng.randint(0, 999), 3)}" for i in range(40)]
    text = "# Doc\n\n" + "\n\n".join(sections)
    lines = split_lines(text)
    spans = chunk_file(load_text("doc.md", text, TEXT, "markdown"), DEFAULT)
    check_spans(text, spans, DEFAULT)
    assert len(spans) > 5
    for span in spans[:-1]:
        after = next(line for line in lines[span.end_line :] if line.strip())
        assert after.startswith("## Section")
    # the same text as plain text is cut wherever the size is best, rarely before a heading
    plain = chunk_text(text, TEXT, "text", DEFAULT)
    before_heading = sum(
        next(line for line in lines[s.end_line :] if line.strip()).startswith("##") for s in plain[:-1]
    )
    assert before_heading < len(plain) - 1


# --- long lines -----------------------------------------------------------------------------


@pytest.mark.parametrize("unit", ["f{i}(x,{i})", "中文{i}😀", "{i}"])
def test_a_line_over_max_tokens_is_cut_into_pieces(unit: str) -> None:
    long_line = "var a=" + ",".join(unit.format(i=i) for i in range(1500)) + ";"
    text = f"// header\n{long_line}\n// footer"
    spans = chunk_text(text, CODE, "javascript", DEFAULT)
    check_spans(text, spans, DEFAULT)
    pieces = [s for s in spans if s.start_line == s.end_line == 2]
    assert len(pieces) >= 3
    assert all("\ufffd" not in p.text for p in pieces)
    assert long_line.startswith(pieces[0].text) and long_line.endswith(pieces[-1].text)
    pos = 0
    for prev, nxt in itertools.pairwise(pieces):
        start = long_line.index(nxt.text, pos + 1)
        assert start < pos + len(prev.text)  # overlapping, no gap
        pos = start
    assert [s.text for s in spans if s.start_line != 2] == ["// header", "// footer"]
