"""A chunk of many nested definitions is embedded in a bounded number of windows of bounded size.

500 nested Python ``def``s (0.5 MB, ten chunks) took 114 s of CPU and 1.35 GB to embed: every
small definition opened a window, and each window was headed by every line enclosing it, so a
chunk's windows grew with the square of its nesting. Now a heading takes at most half a window
(its innermost lines), and a chunk whose definition windows would outnumber
``embedding.max_definition_windows`` gets plain token windows.
"""

from __future__ import annotations

import re

from hybrid_rag.code.definition_windows import definition_window_texts
from hybrid_rag.models.embedders import PACKAGED_MODEL, SentenceTransformerEmbedder
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings
from hybrid_rag.vectors import window_texts

WINDOW, OVERLAP = 64, 8


def _offsets(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def _nested(depth: int, start: int = 0) -> str:
    """One chunk's worth of a deeply nested file: ``def f{i}(x):`` lines, each one deeper."""
    return "".join(f"{' ' * i}def f{i}(x):\n{' ' * (i + 1)}y = x\n" for i in range(start, start + depth))


def test_nested_definitions_give_at_most_the_cap_of_windows() -> None:
    text = _nested(120, start=300)  # a chunk from the middle of a 500-deep file
    offsets = _offsets(text)
    windows = definition_window_texts(
        text, offsets, WINDOW, OVERLAP, min_tokens=8, scopes=True, max_windows=32
    )
    assert len(windows) <= 32
    assert windows == window_texts(text, offsets, WINDOW, OVERLAP)  # over the cap: the token windows
    assert sum(len(w.split()) for w in windows) <= 2 * len(offsets)  # linear in the chunk


def test_a_heading_takes_at_most_half_a_window() -> None:
    text = _nested(120)
    windows = definition_window_texts(text, _offsets(text), WINDOW, OVERLAP, min_tokens=8, scopes=True)
    assert all(len(w.split()) <= WINDOW for w in windows), max(len(w.split()) for w in windows)
    deepest = next(w for w in windows if "f119(x):" in w)
    assert deepest.splitlines()[0].startswith("def f1")  # the innermost enclosing lines are kept
    assert "def f0(x):" not in deepest


def test_ordinary_code_keeps_its_definition_windows() -> None:
    methods = "".join(
        f"    def m{i}(self):\n" + "".join(f"        v{i}_{k} = {k}\n" for k in range(12)) for i in range(8)
    )
    text = "class Pool:\n" + methods
    offsets = _offsets(text)
    capped = definition_window_texts(
        text, offsets, WINDOW, OVERLAP, min_tokens=8, scopes=True, max_windows=32
    )
    assert capped == definition_window_texts(text, offsets, WINDOW, OVERLAP, min_tokens=8, scopes=True)
    assert capped[1].startswith("class Pool:\ndef m1(self):")  # still one method a window, headed


def test_a_changed_cap_names_the_vectors_differently() -> None:
    default = SentenceTransformerEmbedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL))
    assert default.model_name == PACKAGED_MODEL + "#defs2"  # the default keeps every cached vector
    other = SentenceTransformerEmbedder(
        EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, max_definition_windows=8)
    )
    assert other.model_name == PACKAGED_MODEL + "#defs2#maxwin=8"
