"""Definition windows: a chunk's text too long for one embedding window, cut where a definition
starts (``definition_window_texts``; ``embedding.windows: definitions``).

This is the definition finder's last fallback (``code/definitions.py`` is the finder of a whole
file: tree-sitter, then Python's ``ast``, then the chunker's column-0 rule): at embedding time a
window sees a chunk's text alone, so definitions are found there by these line patterns (a
``def``/``class``/``fn`` line with its decorators, a typed head in brace-language text with its
doc comment). Token windows themselves are ``vectors.py``'s.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise

from hybrid_rag.vectors import window_spans, window_texts

# A line that starts a definition: Python, JavaScript/TypeScript, Go, Rust, Ruby, PHP, Kotlin, Swift
_DEFINITION = re.compile(
    r"^[ \t]*(?:(?:export|pub(?:\([^)]*\))?|public|private|protected|static|async|default)[ \t]+)*"
    r"(?:def|class|function|func|fn|impl|trait|interface|struct|enum|module|fun)\b",
    re.MULTILINE,
)
_DECORATOR = re.compile(r"[ \t]*@")
# Brace languages (Java, C, C++, C#, Kotlin, Swift, Scala, Go, Rust, JavaScript, PHP): a function
# or method head with a return type and no keyword, ``public int take() {``, ``int Foo::bar() const``
# or ``std::string name(int id,``. Only looked for in brace-language text (``_braces``), where the
# doc comments above a definition (``///``, ``/** ... */``, ``//``) also move with it.
_SIGNATURE = re.compile(
    r"^[ \t]*(?:[A-Za-z_][\w:<>\[\],.?]*[*&]*[ \t]+[*&]*)+~?(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*[ \t]*\("
    r"[^;]*?(?:[{,(]|\)[\w\s:<>&*,.\->]*\{?)[ \t]*$"
)
_NOT_HEAD = frozenset(  # words that open a statement or an expression, never a definition's head
    re.split(
        r"\s+",
        "return if for while switch catch else do new throw throws case sizeof delete using goto await "
        "yield raise assert print elif except with lambda not and or in is del from import typeof "
        "instanceof super this when match",
    )
)
_DOC_COMMENT = re.compile(r"[ \t]*(?://|/\*|\*)")
_BRACE_END = re.compile(r"[{};][ \t]*$")
BRACE_SHARE = 0.2  # of the non-blank lines ending in { } or ; makes a text brace-language code


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
    braces = _braces(lines)
    above = _DOC_COMMENT if braces else _DECORATOR
    for i, line in enumerate(lines):
        if i and _opens(line, braces):
            j = i
            while j > 0 and (_DECORATOR.match(lines[j - 1]) or above.match(lines[j - 1])):
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
        own = _definition_line(lines, first_line, braces)
        outer = bounded(_enclosing(lines, first_line, braces))
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


def _braces(lines: Sequence[str]) -> bool:
    """Whether the text is brace-language code: enough of its non-blank lines end in { } or ;."""
    filled = [line for line in lines if line.strip()]
    ends = sum(1 for line in filled if _BRACE_END.search(line))
    return bool(filled) and ends >= BRACE_SHARE * len(filled)


def _opens(line: str, braces: bool) -> bool:
    """Whether ``line`` starts a definition (in brace-language text, a typed function head too)."""
    if _DEFINITION.match(line):
        return True
    if not braces or not _SIGNATURE.match(line):
        return False
    head = line.split("(", 1)[0].split()
    return not any(word in _NOT_HEAD for word in head)


def _definition_line(lines: Sequence[str], i: int, braces: bool = False) -> int | None:
    """The definition line that a piece starting at line ``i`` opens (past its decorators and, in
    brace-language text, its doc comment), or None."""
    above = _DOC_COMMENT if braces else _DECORATOR
    while i < len(lines) and (_DECORATOR.match(lines[i]) or above.match(lines[i])):
        i += 1
    return i if i < len(lines) and _opens(lines[i], braces) else None


def _enclosing(lines: Sequence[str], i: int, braces: bool = False) -> list[int]:
    """The definition lines above line ``i`` that enclose it (less indented), outermost first.

    >>> _enclosing(["class A", "{", "  int f()", "  {", "    return 1;"], 4, braces=True)
    [0, 2]
    """
    indent = _indent(lines[i]) if i < len(lines) else 0
    found: list[int] = []
    for j in range(i - 1, -1, -1):
        if indent == 0:
            break
        line = lines[j]
        if not line.strip() or _indent(line) >= indent or (braces and line.strip() == "{"):
            continue  # a brace on a line of its own belongs to the head above it
        indent = _indent(line)
        if _opens(line, braces):
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
