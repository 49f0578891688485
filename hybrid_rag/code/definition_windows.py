"""Definition windows: a chunk's text too long for one embedding window, cut where a definition
starts (``definition_window_texts``; ``embedding.windows: definitions``).

Where a definition starts is asked of the definition finder (``code/definitions.py``): at
embedding time a window sees a chunk's text alone, with no file parse at hand, so the finder
answers by its line rule (``definitions.definition_lines``: a ``def``/``class``/``fn`` line with its
decorators, a typed head in brace-language text with its doc comment). Token windows themselves
are ``vectors.py``'s.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise

from hybrid_rag.code.definitions import DefinitionLines, definition_lines
from hybrid_rag.vectors import window_spans, window_texts


def definition_window_texts(
    text: str,
    offsets: Sequence[tuple[int, int]],
    window: int,
    overlap: int,
    min_tokens: int = 24,
    scopes: bool = False,
    max_windows: int | None = None,
) -> list[str]:
    r"""Like :func:`window_texts`, but a text too long for one window is first cut where a
    definition starts (a ``def``/``class``/``function``/``fn`` ... line, with the decorator lines
    above it; in brace-language text also a typed head such as ``public int take()`` or
    ``int Foo::bar() const``, with its doc comment above it), so each window holds one function
    or class body rather than the tail of one and the head of the next; a definition longer than
    a window is cut into token windows as before. A piece shorter than ``min_tokens`` joins the
    next one (the last joins the one before).

    ``scopes``: each window is headed by the lines of the definitions that enclose it within
    ``text`` (a method's window by its ``class`` line; a long function's later windows by its
    ``def`` line), so a window says whose body it is; the heading counts against ``window`` and
    takes at most half of it (the innermost enclosing lines are kept).

    ``max_windows``: a text whose definition windows would outnumber it (hundreds of small nested
    definitions) gets plain token windows instead (:func:`window_texts`, as many as its length
    needs): the cost of embedding a chunk stays linear in its length whatever its shape.

    >>> import re
    >>> text = "import os\n\ndef a():\n    return 1\n\ndef b():\n    return 2\n"
    >>> offsets = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    >>> definition_window_texts(text, offsets, window=6, overlap=1, min_tokens=1)
    ['import os', 'def a():\n    return 1', 'def b():\n    return 2']
    """
    if len(offsets) <= window:
        return [text]
    starts = [0]
    lines = text.splitlines(keepends=True)
    line_starts = [0]
    for line in lines[:-1]:
        line_starts.append(line_starts[-1] + len(line))
    rules = definition_lines(lines)  # the definition finder's line rule (no parse at hand)
    for i, line in enumerate(lines):
        if i and rules.opens(line):
            j = i
            while j > 0 and rules.attached(lines[j - 1]):
                j -= 1
            if line_starts[j] > starts[-1]:
                starts.append(line_starts[j])
    token_starts = [start for start, _ in offsets]
    cuts = sorted({bisect_left(token_starts, s) for s in starts} | {len(offsets)})
    pieces = [(a, b) for a, b in pairwise(cuts) if b > a]
    merged: list[tuple[int, int]] = []
    carry: int | None = None
    for a, b in pieces:
        a = a if carry is None else carry
        if b - a < min_tokens:
            carry = a
            continue
        carry = None
        merged.append((a, b))
    if carry is not None:
        if merged:
            merged[-1] = (merged[-1][0], len(offsets))
        else:
            merged.append((carry, len(offsets)))
    if max_windows is not None and len(merged) > max_windows:  # each piece is a window at least
        return window_texts(text, offsets, window, overlap)
    if not scopes:
        plain = [
            text[offsets[a + s][0] : offsets[a + e - 1][1]]
            for a, b in merged
            for s, e in window_spans(b - a, window, overlap)
        ]
        if max_windows is not None and len(plain) > max_windows:
            return window_texts(text, offsets, window, overlap)
        return plain

    def cost(heading: Sequence[int]) -> int:  # the heading lines' tokens
        return sum(
            bisect_left(token_starts, line_starts[j] + len(lines[j]))
            - bisect_left(token_starts, line_starts[j])
            for j in heading
        )

    def bounded(heading: list[int]) -> list[int]:  # the innermost lines within half a window
        kept: list[int] = []
        used = 0
        for j in reversed(heading):
            used += cost([j])
            if used > window // 2:
                break
            kept.append(j)
        return kept[::-1]

    out: list[str] = []
    for a, b in merged:
        first_line = bisect_right(line_starts, offsets[a][0]) - 1
        own = _definition_line(lines, first_line, rules)
        outer = bounded(_enclosing(lines, first_line, rules))
        inner = bounded([*outer, *([own] if own is not None else [])])
        spans = _headed_spans(b - a, window - cost(outer), window - cost(inner), overlap)
        for k, (s, e) in enumerate(spans):
            head = "".join(lines[j].strip() + "\n" for j in (outer if k == 0 else inner))
            out.append(head + text[offsets[a + s][0] : offsets[a + e - 1][1]])
        if max_windows is not None and len(out) > max_windows:
            return window_texts(text, offsets, window, overlap)
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _definition_line(lines: Sequence[str], i: int, rules: DefinitionLines) -> int | None:
    """The definition line that a piece starting at line ``i`` opens (past its decorators and, in
    brace-language text, its doc comment), or None."""
    while i < len(lines) and rules.attached(lines[i]):
        i += 1
    return i if i < len(lines) and rules.opens(lines[i]) else None


def _enclosing(lines: Sequence[str], i: int, rules: DefinitionLines) -> list[int]:
    """The definition lines above line ``i`` that enclose it (less indented), outermost first.

    >>> _enclosing(["class A", "{", "  int f()", "  {", "    return 1;"], 4, DefinitionLines(braces=True))
    [0, 2]
    """
    indent = _indent(lines[i]) if i < len(lines) else 0
    found: list[int] = []
    for j in range(i - 1, -1, -1):
        if indent == 0:
            break
        line = lines[j]
        if not line.strip() or _indent(line) >= indent or (rules.braces and line.strip() == "{"):
            continue  # a brace on a line of its own belongs to the head above it
        indent = _indent(line)
        if rules.opens(line):
            found.append(j)
    return found[::-1]


def _headed_spans(n: int, first: int, rest: int, overlap: int) -> list[tuple[int, int]]:
    """Token spans of a piece of ``n`` tokens: the first window ``first`` long, the others ``rest``
    long (what their headings leave of the window, at least half of it), overlapping by
    ``overlap``, the last aligned to the end; with no heading, exactly :func:`window_spans`."""
    window = max(first, rest)
    first, rest = max(first, window // 2, 1), max(rest, window // 2, 1)
    if n <= first:
        return [(0, n)]
    overlap = min(overlap, rest - 1)
    spans = [(0, first)]
    start = first - overlap
    while start + rest < n:
        spans.append((start, start + rest))
        start += rest - overlap
    spans.append((max(n - rest, 0), n))
    return spans
