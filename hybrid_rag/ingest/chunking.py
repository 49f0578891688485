"""Cut a file into token-sized chunks of whole lines.

Rules (``chunk_file``):

* A chunk is ``"\\n".join(lines[start_line - 1 : end_line])`` of the file's text, exactly;
  lines are 1-based and inclusive, and a chunk never starts or ends with a blank line.
* A chunk holds at most ``max_tokens`` tokens (its ``token_count``, counted exactly) and, where
  the file allows, at least ``min_tokens``; a file that fits in ``max_tokens`` is one chunk.
* Consecutive chunks share about ``overlap`` of a chunk's tokens as whole lines (the next chunk
  starts that many lines before the previous one ends). A single line is never split for the
  overlap, so the overlap is smaller (or none) when the last lines are long.
* Code is cut between top-level definitions, as the file's definition finder places them
  (``code/cuts.py``: Python by the ``ast`` module; the languages with a tree-sitter grammar by
  its units; other languages, or a file the grammar cannot parse: a heuristic on lines at
  column 0), packing several small ones into a chunk; a
  definition is cut only when it alone is longer than ``max_tokens``, then preferably before a
  nested definition or after a blank line. Cuts between top-level definitions carry no overlap,
  and overlap never reaches back across a top-level definition boundary.
* Markdown and reStructuredText prefer to cut before a heading, then at a blank line; other
  text at a blank line.
* A line longer than ``max_tokens`` (minified JavaScript, a one-line JSON document) is cut into
  pieces of at most ``max_tokens`` tokens at character boundaries, with the same overlap.
  Those pieces have ``start_line == end_line`` and their text is a substring of that line,
  the only chunks whose text is not the whole of their lines.
* A tail smaller than ``min_tokens / 4`` is avoided by cutting the previous chunk earlier.

Token counts use ``hybrid_rag.tokens``. Each distinct line is encoded once (with its newline);
the plan adds those counts up, which is within a token or so of the truth, and each chunk is
then encoded once for its exact ``token_count`` (a chunk that is over ``max_tokens`` after all
loses lines). Everything here is deterministic.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from collections.abc import Callable, Sequence

from hybrid_rag.code.cuts import definition_cuts
from hybrid_rag.code.definitions import Definitions
from hybrid_rag.settings import ChunkingSettings
from hybrid_rag.tokens import get_encoding
from hybrid_rag.types import ChunkSpan, LoadedFile, SourceType

# Cut priorities: the planner picks the highest one in its window, then the furthest.
TOP, NESTED, PARAGRAPH, LINE = 4, 3, 2, 1
HEADING = NESTED  # text has no top-level units; a heading is its strongest cut

_ATX_RE = re.compile(r" {0,3}#{1,6}(?:\s|$)")
_SETEXT_RE = re.compile(r" {0,3}(?:=+|-+)\s*$")
_FENCE_RE = re.compile(r" {0,3}(?:```|~~~)")
_RST_ADORN_RE = re.compile(r"([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them (``text`` already has ``\\n`` line endings)."""
    return text.split("\n")


def line_costs(lines: Sequence[str], encode: Callable[[str], list[int]]) -> list[int]:
    """Tokens of each line with its newline, each distinct line encoded once; 0 for empty lines.

    Pre-tokenisation never joins a newline with the next non-blank line, so the sum over a range
    of lines is within a token or so of its exact count: an empty line merges into the newline
    before it ("\\n\\n" is one token), and blank lines at a chunk's ends are trimmed.
    """
    cache: dict[str, int] = {}
    costs = []
    for line in lines:
        cost = cache.get(line)
        if cost is None:
            cost = cache[line] = len(encode(line + "\n")) if line else 0
        costs.append(cost)
    return costs


def _blank(line: str) -> bool:
    return not line.strip()


def text_priorities(lines: Sequence[str], language: str) -> list[int]:
    """Cut priority before each line (and at the end): heading, then paragraph, then any line.

    Markdown headings (ATX and setext) outside fenced code, reStructuredText titles (over- and
    underlined), and blank-line paragraph starts.
    """
    n = len(lines)
    prio = [LINE] * (n + 1)
    in_fence = False
    for i, line in enumerate(lines):
        if language == "markdown" and _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or _blank(line):
            continue
        if i and _blank(lines[i - 1]):
            prio[i] = PARAGRAPH
        nxt = lines[i + 1] if i + 1 < n else ""
        if language == "markdown":
            if _ATX_RE.match(line) or (_SETEXT_RE.match(nxt) and not _SETEXT_RE.match(line)):
                prio[i] = HEADING
        elif language == "rst" and _rst_title(line, nxt):
            over = i - 1
            prio[over if over >= 0 and lines[over].strip() == nxt.strip() else i] = HEADING
    return prio


def _rst_title(line: str, underline: str) -> bool:
    """``line`` is a reStructuredText title: underlined by a run of one punctuation character."""
    if not _RST_ADORN_RE.match(underline) or _RST_ADORN_RE.match(line):
        return False
    return len(underline.rstrip()) >= len(line.strip())


def code_priorities(
    lines: Sequence[str], language: str, path: str = "", definitions: Definitions | None = None
) -> tuple[list[int], list[bool]]:
    """Cut priorities for source code and which cuts fall between top-level definitions.

    Asked of the file's definition finder (``code/definitions.py``, one parse a file): Python at
    its statement starts; languages with a tree-sitter grammar by its units; otherwise (or when
    that parse fails) the heuristic on lines at column 0.
    """
    top, nested = definition_cuts(lines, language, path, definitions)
    n = len(lines)
    prio = [LINE] * (n + 1)
    for i in range(1, n):
        if _blank(lines[i - 1]) and not _blank(lines[i]):
            prio[i] = PARAGRAPH
    for i in nested:
        prio[i] = NESTED
    is_top = [False] * (n + 1)
    for i in top:
        prio[i], is_top[i] = TOP, True
    return prio, is_top


def plan_ranges(
    costs: Sequence[int],
    prio: Sequence[int],
    is_top: Sequence[bool] | None,
    lo: int,
    hi: int,
    settings: ChunkingSettings,
    fits: Callable[[int, int], bool] | None = None,
) -> list[tuple[int, int]]:
    """Cut lines ``[lo, hi)`` into ``(start, stop)`` ranges (0-based, stop exclusive).

    Pure and greedy: from each start, the window is every stop whose cost fits ``max_tokens``;
    for code the furthest top-level cut in it wins, otherwise the highest priority among the
    stops of at least ``min_tokens`` (the furthest of those). Stops that leave a tail under
    ``min_tokens / 4`` are avoided when another exists. Every cost must be <= ``max_tokens``.
    ``fits(start, stop)``, if given, is the exact check: a range that fails it loses lines
    from its end.
    """
    max_t, min_t = settings.max_tokens, settings.min_tokens
    tiny = min_t // 4
    prefix = [0]
    for c in costs[lo:hi]:
        prefix.append(prefix[-1] + c)

    def size(a: int, b: int) -> int:
        return prefix[b - lo] - prefix[a - lo]

    tops: list[int] = []
    if is_top is not None:
        tops = [lo, *(i for i in range(lo + 1, hi) if is_top[i]), hi]
    ranges: list[tuple[int, int]] = []
    start = done = lo  # done: the previous stop; every chunk must go past it
    while start < hi:
        if size(start, hi) <= max_t:
            stop = hi
        else:
            stop_max = lo + bisect.bisect_right(prefix, prefix[start - lo] + max_t) - 1
            window = range(max(start, done) + 1, max(stop_max, done + 1) + 1)
            stops = [b for b in window if size(b, hi) >= tiny] or list(window)
            top = _top_stop(tops, max(start, done), stop_max, size, hi, tiny, max_t) if tops else None
            if top is not None:
                stop = top
            else:
                pool = [b for b in stops if size(start, b) >= min_t] or stops
                stop = max(pool, key=lambda b: (prio[b], b))
        while fits is not None and not fits(start, stop):
            if stop - 1 > max(start, done):
                stop -= 1
            elif start < done:
                start += 1  # less overlap
            else:
                break  # one line (chunk_text cuts it when it does not fit without its newline)
        ranges.append((start, stop))
        if stop >= hi:
            break
        start, done = _overlap_start(costs, tops, start, stop, settings), stop
    return ranges


def _top_stop(
    tops: list[int],
    start: int,
    stop_max: int,
    size: Callable[[int, int], int],
    hi: int,
    tiny: int,
    max_t: int,
) -> int | None:
    """The furthest top-level cut in the window (not leaving a tiny tail, when possible), or None
    when there is none, or when taking it would leave a tiny chunk before a unit that must be cut
    anyway (then the tiny part is packed with the start of that unit)."""
    a, b = bisect.bisect_right(tops, start), bisect.bisect_right(tops, stop_max)  # tops in (start, stop_max]
    inside = tops[a:b]
    if not inside:
        return None
    good = [t for t in inside if t == hi or size(t, hi) >= tiny] or inside
    stop = good[-1]
    after = tops[bisect.bisect_right(tops, stop)] if stop < hi else hi
    if size(start, stop) < tiny and size(stop, after) > max_t:
        return None
    return stop


def _overlap_start(
    costs: Sequence[int], tops: list[int], start: int, stop: int, settings: ChunkingSettings
) -> int:
    """Where the next chunk starts: whole lines before ``stop`` worth about ``overlap`` of the
    chunk, never across a top-level cut, and leaving room for the next line."""
    floor = start + 1
    if tops:
        floor = max(floor, tops[bisect.bisect_right(tops, stop) - 1])
    target = settings.overlap * sum(costs[start:stop])
    nxt, acc = stop, 0
    while nxt - 1 >= floor and acc + costs[nxt - 1] <= target:
        nxt -= 1
        acc += costs[nxt]
    if nxt == stop and nxt - 1 >= floor and 0 < costs[nxt - 1] <= 2 * target:
        nxt, acc = nxt - 1, costs[nxt - 1]
    while nxt < stop and acc + costs[stop] > settings.max_tokens:  # the next chunk must reach past stop
        acc -= costs[nxt]
        nxt += 1
    return nxt


def _long_line_pieces(line: str, encoding: str, settings: ChunkingSettings) -> list[tuple[str, int]]:
    """Cut one over-long line into (text, token count) pieces at token and character boundaries."""
    enc = get_encoding(encoding)
    data = line.encode("utf-8")
    tokens = enc.encode_ordinary(line)
    width = {t: len(enc.decode_single_token_bytes(t)) for t in set(tokens)}
    offsets = list(itertools.accumulate(map(width.__getitem__, tokens), initial=0))

    def char_cut(i: int, step: int) -> int:  # nearest token cut that is also a character boundary
        while 0 < i < len(tokens) and (data[offsets[i]] & 0xC0) == 0x80:
            i += step
        return i

    pieces: list[tuple[str, int]] = []
    a, limit = 0, settings.max_tokens
    while True:
        b = min(a + limit, len(tokens))
        b = char_cut(b, -1) if char_cut(b, -1) > a else char_cut(b, 1)
        text = data[offsets[a] : offsets[b]].decode("utf-8")
        count = len(enc.encode_ordinary(text))
        if count > settings.max_tokens and b - a > 1:
            limit = max(1, (b - a) * 9 // 10)  # re-encoding a slice can cost a few more tokens
            continue
        pieces.append((text, count))
        if b >= len(tokens):
            return pieces
        nxt = char_cut(b - int(settings.overlap * (b - a)), -1)
        a, limit = (nxt if nxt > a else b), settings.max_tokens


def chunk_file(
    file: LoadedFile, settings: ChunkingSettings, definitions: Definitions | None = None
) -> list[ChunkSpan]:
    """Chunks of ``file`` in order (see the module docstring for the rules). Blank text -> [].
    ``definitions``: the file's definition finder, when the caller asks it for symbols too."""
    return chunk_text(
        file.text, file.source_type, file.language, settings, path=file.path, definitions=definitions
    )


def chunk_text(
    text: str,
    source_type: SourceType,
    language: str,
    settings: ChunkingSettings,
    path: str = "",
    definitions: Definitions | None = None,
) -> list[ChunkSpan]:
    """``chunk_file`` on a bare string (``\\n`` line endings); ``path`` picks a code file's grammar."""
    if not text.strip():
        return []
    encode = get_encoding(settings.encoding).encode_ordinary
    lines = split_lines(text)
    max_t = settings.max_tokens
    costs = line_costs(lines, encode)
    too_long = [i for i, c in enumerate(costs) if c > max_t and len(encode(lines[i])) > max_t]
    costs = [min(c, max_t) for c in costs]  # a line of max_t tokens alone still fits
    if source_type == SourceType.CODE:
        prio, is_top = code_priorities(lines, language, path, definitions)
    else:
        prio, is_top = text_priorities(lines, language), None
    measured: dict[tuple[int, int], ChunkSpan | None] = {}

    def measure(start: int, stop: int) -> ChunkSpan | None:
        if (start, stop) not in measured:
            measured[start, stop] = _make_span(lines, start, stop, encode)
        return measured[start, stop]

    def fits(start: int, stop: int) -> bool:
        span = measure(start, stop)
        return span is None or span.token_count <= max_t

    spans: list[ChunkSpan] = []
    lo = 0
    for hi in [*too_long, len(lines)]:
        last_line = 0
        for start, stop in plan_ranges(costs, prio, is_top, lo, hi, settings, fits):
            span = measure(start, stop)
            if span is None or span.end_line <= last_line:  # blank, or inside the previous chunk
                continue
            if span.token_count > max_t:  # one line that fit with its newline but not without it
                spans.extend(_line_pieces(lines, span.start_line - 1, settings))
            else:
                spans.append(span)
            last_line = span.end_line
        if hi < len(lines):
            spans.extend(_line_pieces(lines, hi, settings))
        lo = hi + 1
    return spans


def _line_pieces(lines: Sequence[str], i: int, settings: ChunkingSettings) -> list[ChunkSpan]:
    """Line ``i`` (0-based), too long for one chunk, as chunks of its pieces."""
    return [
        ChunkSpan(piece, i + 1, i + 1, count, _sha(piece))
        for piece, count in _long_line_pieces(lines[i], settings.encoding, settings)
        if piece.strip()
    ]


def _make_span(
    lines: Sequence[str], start: int, stop: int, encode: Callable[[str], list[int]]
) -> ChunkSpan | None:
    """The span for lines ``[start, stop)`` without blank lines at either end, counted exactly."""
    while start < stop and _blank(lines[start]):
        start += 1
    while stop > start and _blank(lines[stop - 1]):
        stop -= 1
    if start == stop:
        return None
    text = "\n".join(lines[start:stop])
    return ChunkSpan(text, start + 1, stop, len(encode(text)), _sha(text))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
