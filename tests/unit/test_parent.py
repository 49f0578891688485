"""Parent context against a real MetadataStore: neighbours, enclosing definitions, fallbacks."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from hybrid_rag.errors import ConfigError
from hybrid_rag.ingest.chunking import chunk_file
from hybrid_rag.retrieval.parent import (
    ParentContext,
    ParentMode,
    attach_parent_context,
    definition_start,
    merge_overlap,
)
from hybrid_rag.settings import ChunkingSettings
from hybrid_rag.store import FileChunks, MetadataStore
from hybrid_rag.types import Chunk, ChunkSpan, LoadedFile, ScoredChunk, SourceType

PY = """import os


@cache
@other.deco(1)
def long_function(a, b):
    \"\"\"Doc.\"\"\"
    x = a + b
    y = x * 2

    for i in range(10):
        y += i
    return y


class Widget:
    def method(self):
        return 1

    def other(self):
        return 2


CONSTANT = 3
print(CONSTANT)"""
PY_SPANS = [(1, 1), (4, 9), (8, 13), (16, 18), (20, 21), (24, 25)]  # chunk positions 0..5

JS = """import x from "y";

export const handler = async (event) => {
  const a = 1;
  return a;
};

function helper() {
  return 2;
}"""
JS_SPANS = [(1, 3), (4, 6), (8, 10)]

MD = """# Title

Intro paragraph.

## Part

Body text."""
MD_SPANS = [(1, 3), (5, 7)]

GUIDE = """Preface line.

# Install

Run the installer.
Then reboot.

```sh
# not a heading: fenced code
make install
```

Check the version.

Setup
-----

Edit the config.
Save it."""
GUIDE_SPANS = [(1, 1), (3, 6), (5, 10), (9, 13), (15, 18), (18, 19)]

_rng = random.Random(3)
LONG = "".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(300))
LONG_TEXT = f"header\n{LONG}\nfooter"
LONG_PIECES = [
    (1, 1, "header"),
    (2, 2, LONG[:120]),
    (2, 2, LONG[100:220]),
    (2, 2, LONG[200:]),
    (3, 3, "footer"),
]


def _file(path: str, text: str, source_type: SourceType, language: str) -> LoadedFile:
    return LoadedFile(
        path, text, hashlib.sha256(text.encode()).hexdigest(), len(text), 0.0, source_type, language
    )


def _spans(text: str, spans: list[tuple[int, int]]) -> list[ChunkSpan]:
    lines = text.split("\n")
    out = []
    for a, b in spans:
        body = "\n".join(lines[a - 1 : b])
        out.append(ChunkSpan(body, a, b, 1, hashlib.sha256(f"{a}-{b}{body}".encode()).hexdigest()))
    return out


def _lines(text: str, start: int, end: int) -> str:
    return "\n".join(text.split("\n")[start - 1 : end])


@pytest.fixture
def store(tmp_path: Path) -> MetadataStore:
    s = MetadataStore(tmp_path / "store.sqlite3")
    pieces = [
        ChunkSpan(t, a, b, 1, hashlib.sha256(f"{i}{t}".encode()).hexdigest())
        for i, (a, b, t) in enumerate(LONG_PIECES)
    ]
    s.write_files(
        [
            FileChunks(_file("/r/app.py", PY, SourceType.CODE, "python"), _spans(PY, PY_SPANS)),
            FileChunks(_file("/r/app.js", JS, SourceType.CODE, "javascript"), _spans(JS, JS_SPANS)),
            FileChunks(_file("/r/doc.md", MD, SourceType.TEXT, "markdown"), _spans(MD, MD_SPANS)),
            FileChunks(_file("/r/guide.md", GUIDE, SourceType.TEXT, "markdown"), _spans(GUIDE, GUIDE_SPANS)),
            FileChunks(_file("/r/min.js", LONG_TEXT, SourceType.CODE, "javascript"), pieces),
        ],
        collection="default",
    )
    yield s
    s.close()


def _chunks(store: MetadataStore, path: str) -> list[Chunk]:
    doc = next(d for d in store.documents() if d.path == path)
    return store.document_chunks(doc.id)


def _results(chunks: list[Chunk]) -> list[ScoredChunk]:
    return [ScoredChunk(c, 1.0 / (i + 1)) for i, c in enumerate(chunks)]


# -- neighbours ------------------------------------------------------------------------------


def test_neighbours_are_the_lines_of_the_adjacent_chunks(store):
    chunks = _chunks(store, "/r/app.py")
    got = attach_parent_context(_results(chunks), store, "neighbours", radius=1)
    expected_spans = {0: (1, 9), 1: (1, 13), 2: (4, 18), 3: (8, 21), 4: (16, 25), 5: (20, 25)}
    for position, (start, end) in expected_spans.items():
        context = got[chunks[position].id]
        assert (context.start_line, context.end_line) == (start, end)
        assert context.text == _lines(PY, start, end)  # blank lines between chunks come back empty
        assert context.kind == "neighbours" and context.path == "/r/app.py"
        assert context.citation == f"/r/app.py:{start}-{end}"


def test_radius_two_and_zero(store):
    chunks = _chunks(store, "/r/app.py")
    wide = attach_parent_context([_results(chunks)[2]], store, ParentMode.NEIGHBOURS, radius=2)
    assert wide[chunks[2].id].text == _lines(PY, 1, 21)
    assert attach_parent_context(_results(chunks), store, "neighbours", radius=0) == {}
    with pytest.raises(ValueError, match="radius"):
        attach_parent_context(_results(chunks), store, "neighbours", radius=-1)


def test_a_single_chunk_document_has_no_context(tmp_path):
    s = MetadataStore(tmp_path / "one.sqlite3")
    text = "def f():\n    return 1"
    s.write_files(
        [FileChunks(_file("/one.py", text, SourceType.CODE, "python"), _spans(text, [(1, 2)]))],
        collection="c",
    )
    chunks = _chunks(s, "/one.py")
    assert attach_parent_context(_results(chunks), s, "neighbours") == {}
    assert attach_parent_context(_results(chunks), s, "definition") == {}
    s.close()


def test_pieces_of_a_long_line_merge_on_their_overlap(store):
    chunks = _chunks(store, "/r/min.js")
    middle = _results(chunks)[2]
    assert middle.text == LONG[100:220]
    own_line = attach_parent_context([middle], store, "neighbours", radius=1)[middle.id]
    assert (own_line.start_line, own_line.end_line) == (2, 2) and own_line.text == LONG
    wider = attach_parent_context([middle], store, "neighbours", radius=2)[middle.id]
    assert wider.text == LONG_TEXT


def test_merge_overlap():
    assert merge_overlap("abcdef", "defgh") == "abcdefgh"
    assert merge_overlap("abcdef", "cde") == "abcdef"  # already inside
    assert merge_overlap("abc", "xyz") == "abcxyz"  # no overlap: concatenated
    assert merge_overlap("", "xyz") == "xyz"


# -- definitions -----------------------------------------------------------------------------


def test_a_chunk_inside_a_function_gets_the_function_from_its_decorators(store):
    chunks = _chunks(store, "/r/app.py")
    inside = _results(chunks)[2]  # lines 8-13, inside long_function
    got = attach_parent_context([inside], store, "definition")[inside.id]
    assert got == ParentContext(inside.id, "/r/app.py", 4, 13, _lines(PY, 4, 13), "definition")
    assert got.text.startswith("@cache\n@other.deco(1)\ndef long_function")


def test_an_indented_method_gets_its_enclosing_class(store):
    chunks = _chunks(store, "/r/app.py")
    method = _results(chunks)[4]  # lines 20-21: "    def other(self):"
    got = attach_parent_context([method], store, "definition")[method.id]
    assert (got.start_line, got.end_line, got.kind) == (16, 21, "definition")
    assert got.text == _lines(PY, 16, 21)


def test_definition_falls_back_to_neighbours(store):
    chunks = _chunks(store, "/r/app.py")
    got = attach_parent_context(_results(chunks), store, "definition")
    assert {chunks[p].id: got[chunks[p].id].kind for p in range(6)} == {
        chunks[0].id: "neighbours",  # module level (import)
        chunks[1].id: "neighbours",  # starts at its own decorated definition
        chunks[2].id: "definition",
        chunks[3].id: "neighbours",  # starts at its own class
        chunks[4].id: "definition",
        chunks[5].id: "neighbours",  # module level after the class
    }
    assert got[chunks[5].id].text == _lines(PY, 20, 25)


def test_a_definition_longer_than_max_lines_falls_back_to_neighbours(store):
    inside = _results(_chunks(store, "/r/app.py"))[2]
    got = attach_parent_context([inside], store, "definition", max_lines=9)[inside.id]
    assert (got.kind, got.start_line, got.end_line) == ("neighbours", 4, 18)
    assert attach_parent_context([inside], store, "definition", max_lines=10)[inside.id].kind == "definition"


def test_javascript_arrow_functions_and_text_documents(store):
    js = _chunks(store, "/r/app.js")
    got = attach_parent_context(_results(js), store, "definition")
    assert (got[js[1].id].kind, got[js[1].id].start_line, got[js[1].id].end_line) == ("definition", 3, 6)
    assert got[js[2].id].kind == "neighbours"  # starts at its own function
    md = _chunks(store, "/r/doc.md")
    text = attach_parent_context(_results(md), store, "definition")
    assert {c.kind for c in text.values()} == {"neighbours"}
    assert text[md[1].id].text == MD


@pytest.mark.parametrize(
    ("lines", "line", "expected"),
    [
        (["def f(", "    a,", "):", "    body"], 4, 1),  # a closing bracket at column 0 is skipped
        (["x = 1", "    y"], 2, None),  # module level
        (["# note", "def f():", "    pass"], 1, 1),  # a comment right above its own definition
        (["pub(crate) fn go() {", "    x", "}"], 2, 1),
        (["impl<T> Foo<T> {", "    fn a() {}"], 2, 1),
        (["func (r *T) Name() {", "\tbody"], 2, 1),
        (["int main(void) {", "    return 0;"], 2, None),  # C-style: not recognised
        (["class A:", "    x = 1", "", "    # c", "    y = 2"], 5, 1),
    ],
)
def test_definition_start(lines, line, expected):
    assert definition_start({i + 1: t for i, t in enumerate(lines)}, line) == expected


# -- the stage -------------------------------------------------------------------------------


def test_each_document_is_read_once_and_missing_chunks_are_skipped(store, monkeypatch):
    calls: list[int] = []
    real = store.document_chunks

    def counting(document_id: int) -> list[Chunk]:
        calls.append(document_id)
        return real(document_id)

    chunks = _chunks(store, "/r/app.py") + _chunks(store, "/r/app.js")
    gone = ScoredChunk(
        Chunk(
            10**9,
            chunks[0].document_id,
            "/r/app.py",
            99,
            1,
            1,
            "x",
            1,
            "0" * 64,
            SourceType.CODE,
            "python",
            "default",
        ),
        0.1,
    )
    monkeypatch.setattr(store, "document_chunks", counting)
    results = [*_results(chunks), _results(chunks)[0], gone]
    got = attach_parent_context(results, store, "neighbours")
    assert sorted(calls) == sorted({c.document_id for c in chunks})
    assert set(got) == {c.id for c in chunks}
    assert attach_parent_context([], store, "neighbours") == {}


def test_a_text_chunk_gets_its_enclosing_section_from_the_heading_down(store):
    """Markdown ATX and setext headings, not a ``#`` line inside fenced code; text before the
    first heading and a chunk that starts at its own heading get their neighbours."""
    guide = _chunks(store, "/r/guide.md")
    got = attach_parent_context(_results(guide), store, "enclosing", radius=0)
    assert guide[0].id not in got  # before any heading, radius 0: nothing beyond itself
    assert guide[1].id not in got  # starts at "# Install" itself, radius 0: nothing beyond itself
    assert got[guide[2].id] == ParentContext(
        guide[2].id, "/r/guide.md", 3, 10, _lines(GUIDE, 3, 10), "section"
    )
    assert (got[guide[3].id].start_line, got[guide[3].id].kind) == (3, "section")  # the fence's "#" is code
    assert guide[4].id not in got  # starts at the setext heading "Setup"
    assert got[guide[5].id] == ParentContext(
        guide[5].id, "/r/guide.md", 15, 19, _lines(GUIDE, 15, 19), "section"
    )
    legacy = attach_parent_context(_results(guide), store, "definition", radius=0)
    assert legacy == got  # the old name of the mode
    short = attach_parent_context(_results(guide), store, "enclosing", radius=0, max_lines=10)
    assert guide[3].id not in short and short[guide[2].id].kind == "section"  # 3..13 is 11 lines


def test_bad_arguments():
    with pytest.raises(ConfigError, match="valid values: neighbours, enclosing"):
        attach_parent_context([], None, "parent")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_lines"):
        attach_parent_context([], None, "definition", max_lines=0)  # type: ignore[arg-type]


def test_context_rebuilt_from_real_chunker_output_equals_the_file(tmp_path):
    """With the real chunker (overlaps, blank lines between chunks), every context is the file's lines."""
    source = "\n\n".join(
        f"def function_{i}(value):\n"
        + "\n".join(f"    value = value * {j} + {i}  # step {j}" for j in range(12))
        + "\n    return value"
        for i in range(6)
    )
    loaded = _file("/src/gen.py", source, SourceType.CODE, "python")
    spans = chunk_file(loaded, ChunkingSettings(min_tokens=40, max_tokens=80, overlap=0.2))
    assert len(spans) > 6  # functions are cut inside, so some chunks start mid-definition
    s = MetadataStore(tmp_path / "real.sqlite3")
    s.write_files([FileChunks(loaded, spans)], collection="c")
    chunks = _chunks(s, "/src/gen.py")
    for mode in ("neighbours", "definition"):
        got = attach_parent_context(_results(chunks), s, mode, radius=1)
        assert got, mode
        for context in got.values():
            assert context.text == _lines(source, context.start_line, context.end_line)
            if context.kind == "definition":
                assert context.text.startswith("def function_")
    assert any(
        c.kind == "definition" for c in attach_parent_context(_results(chunks), s, "definition").values()
    )
    s.close()
