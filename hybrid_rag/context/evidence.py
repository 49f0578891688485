"""The maths of context building, as pure functions: terms, scoring units, line windows, topics.

* **Terms**: ``lang.tokenize.content_terms`` (words and identifier parts, no stop words).
* **Units** are what gets embedded and ranked: sentences of prose (a paragraph's lines joined,
  then cut after ``.``, ``!`` or ``?``) and non-trivial lines of code. Each unit knows the lines
  of its chunk that it spans.
* **Relevance** of a unit to the query: ``0.5 * max(cos, 0) + 0.5 * term overlap`` (the share of
  query terms it contains); just the cosine when the query has no terms.
* **Line scores**: a line scores as the best unit spanning it; a heading scores 0, like a blank
  line, so that a quote never starts or ends on a heading (a heading names a section, it does not
  answer anything): a bare heading never wins over a line that holds the answer.
* **Topics**: ``cluster_count(n) = 1`` for ``n <= 3`` results, else ``round(sqrt(n / 2))``
  (10 → 2, 30 → 4, 50 → 5), at most ``max_clusters``; MiniBatchKMeans with a fixed seed and
  ``n_init``, labels renumbered so that topic 0 holds the best hit.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_rag.lang.tokenize import content_terms
from hybrid_rag.lang.windows import term_overlap

N_INIT = 3  # k-means restarts: fixed, so that a seed gives one answer
LINE_BASE_SCORE = 0.02  # a non-blank line is worth a little context even when it matches nothing

_WORD = re.compile(r"\w+")
# a sentence ends at . ! ? and a space; at the full-width 。！？ of Chinese and Japanese with none;
# at the danda । ॥ of Devanagari
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])\s*(?=\S)|(?<=[।॥])\s*(?=\S)")
_BLOCK_START = re.compile(r"^\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|>)")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`\\]|\\.)*`")
_COMMENT = re.compile(r"(?:#|//).*$")
_IMPORT = re.compile(r"^\s*(?:import\s+[\w.]|from\s+[\w.]+\s+import\b)")
_SIGNATURE = re.compile(
    r"^\s*(?:export\s+|pub(?:\([^)]*\))?\s+|public\s+|private\s+|protected\s+|static\s+|async\s+)*"
    r"(?:def|class|function|func|fn|interface|struct|enum|trait|impl|type|module)\b"
)


@dataclass(frozen=True)
class Unit:
    """A sentence (prose) or a line (code) of chunk ``chunk``, spanning its lines ``first..last``
    (0-based offsets into the chunk's text, inclusive)."""

    chunk: int
    first: int
    last: int
    text: str
    signature: bool = False
    heading: bool = False


def import_lines(lines: Sequence[str]) -> set[int]:
    """Offsets of the lines that import (``import x``, ``from x import y``, and the lines of a
    parenthesised ``from x import (...)`` up to its closing parenthesis)."""
    out: set[int] = set()
    open_paren = False
    for i, line in enumerate(lines):
        if open_paren:
            out.add(i)
            open_paren = ")" not in line
        elif _IMPORT.match(line):
            out.add(i)
            open_paren = "(" in line and ")" not in line
    return out


def code_units(chunk: int, lines: Sequence[str], *, imports: bool = True) -> list[Unit]:
    """One unit per line with at least two word characters (braces and blank lines are not units);
    ``imports=False``: nor are import lines (``context.quote_imports``: a quote may still carry one
    between the lines that answer, as it carries any line, but never for its own sake)."""
    skipped = set() if imports else import_lines(lines)
    out = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if i not in skipped and len("".join(_WORD.findall(stripped))) >= 2:
            out.append(Unit(chunk, i, i, stripped, bool(_SIGNATURE.match(line))))
    return out


def prose_units(chunk: int, lines: Sequence[str]) -> list[Unit]:
    """Sentences of each paragraph (consecutive non-blank lines; a list item starts one, a heading is one)."""
    out: list[Unit] = []
    paragraph: list[int] = []

    def flush() -> None:
        if not paragraph:
            return
        text, owner = "", []
        for i in paragraph:
            piece = lines[i].strip()
            if text:
                text += " "
                owner.append(i)
            text += piece
            owner.extend([i] * len(piece))
        start = 0
        for m in [*_SENTENCE_END.finditer(text), None]:
            end = m.start() if m else len(text)
            sentence = text[start:end].strip()
            if sentence and _WORD.search(sentence):
                first, last = owner[start], owner[max(end - 1, start)]
                heading = first == last and bool(_HEADING.match(lines[first]))
                out.append(Unit(chunk, first, last, sentence, heading=heading))
            start = m.end() if m else end
        paragraph.clear()

    for i, line in enumerate(lines):
        if not line.strip():
            flush()
            continue
        if _BLOCK_START.match(line):
            flush()
        paragraph.append(i)
        if _HEADING.match(line):
            flush()
    flush()
    return out


def relevance(cosine: float, overlap: float, has_terms: bool) -> float:
    """How well a unit answers the query, in [0, 1] (see the module docstring)."""
    cos = min(max(cosine, 0.0), 1.0)
    return 0.5 * cos + 0.5 * overlap if has_terms else cos


def line_scores(n_lines: int, lines: Sequence[str], units: Iterable[tuple[Unit, float]]) -> np.ndarray:
    """Per line of a chunk: the best relevance of a unit spanning it, plus ``LINE_BASE_SCORE``
    for a non-blank line; a blank line and a heading score 0 (module docstring)."""
    scores = np.array([LINE_BASE_SCORE if line.strip() else 0.0 for line in lines[:n_lines]])
    headings = []
    for unit, score in units:
        if unit.heading:
            headings.append(unit.first)
            continue
        for i in range(unit.first, unit.last + 1):
            if lines[i].strip():
                scores[i] = max(scores[i], LINE_BASE_SCORE + score)
    scores[headings] = 0.0
    return scores


def code_statements(lines: Sequence[str]) -> list[tuple[int, int]]:
    """``(first, last)`` of each code statement that spans several lines: while a ``(`` or ``[`` is
    open, or a ``{`` opened as a value (after ``=``, ``:``, ``(``, ``[``, ``,`` or ``return``), the
    statement goes on (a block's ``{`` does not hold its body together). Strings and ``#`` / ``//``
    comments are skipped; a rough reading, for where a quote may end.

    >>> code_statements(["Cookies.set('id', 'v', {", "  expires: 1", "})", "f()"])
    [(0, 2)]
    >>> code_statements(["function f() {", "  g(1,", "    2)", "}"])
    [(1, 2)]
    """
    out: list[tuple[int, int]] = []
    stack: list[bool] = []  # per open bracket: whether it holds a statement together
    start = 0
    before = ""  # the last code character read (across lines)
    for i, line in enumerate(lines):
        code = _COMMENT.sub("", _STRING.sub('""', line))
        if not any(stack):
            start = i
        for k, ch in enumerate(code):
            if ch in "([":
                stack.append(True)
            elif ch == "{":
                stack.append(before in "=:([," or code[:k].rstrip().endswith("return"))
            elif ch in ")]}" and stack:
                stack.pop()
            if not ch.isspace():
                before = ch
        if any(stack):
            continue
        if i > start:
            out.append((start, i))
    if any(stack) and len(lines) - 1 > start:
        out.append((start, len(lines) - 1))
    return out


def statement_reach(n_lines: int, spans: Iterable[tuple[int, int]]) -> list[int]:
    """Per line: the last line of the longest statement (a unit, a code statement) that starts on
    it; the line itself when none goes on past it. A quote that holds a statement's first line
    holds its last (``best_window``'s ``reach``)."""
    reach = list(range(n_lines))
    for first, last in spans:
        if 0 <= first < n_lines:
            reach[first] = max(reach[first], min(last, n_lines - 1))
    return reach


def statement_leads(
    n_lines: int, units: Iterable[tuple[Unit, float]], statements: Iterable[tuple[int, int]] = ()
) -> list[float]:
    """Per line: the score (``LINE_BASE_SCORE`` + relevance) of the best unit that starts on it, 0
    when none does (a blank line, a heading, a line that only goes on with a sentence); a
    multi-line code ``statement`` leads with its best line's score from its first line only.

    >>> statement_leads(3, [(Unit(0, 0, 1, "a b."), 0.5), (Unit(0, 1, 2, "c d."), 0.2)])
    [0.52, 0.22, 0.0]
    """
    lead = [0.0] * n_lines
    for unit, score in units:
        if not unit.heading and 0 <= unit.first < n_lines:
            lead[unit.first] = max(lead[unit.first], round(LINE_BASE_SCORE + score, 12))
    for first, last in statements:
        inner = range(first + 1, min(last, n_lines - 1) + 1)
        lead[first] = max([lead[first], *(lead[k] for k in inner)])
        for k in inner:
            lead[k] = 0.0
    return lead


def best_line(
    scores: Sequence[float],
    costs: Sequence[int],
    cap: int,
    blocked: Sequence[bool] | None = None,
    *,
    reach: Sequence[int] | None = None,
) -> int | None:
    """The one line with the highest score (above 0) that costs at most ``cap``, off the
    ``blocked`` lines and, given ``reach``, not the first line of a statement that goes on past
    it; ties go to the cheaper, then the earlier line. None when none fits.

    >>> best_line([0.1, 0.9, 0.9, 0.5], [5, 9, 7, 5], 8)
    2
    """
    fits = [
        i
        for i in range(len(scores))
        if scores[i] > 0
        and costs[i] <= cap
        and not (blocked is not None and blocked[i])
        and (reach is None or reach[i] <= i)
    ]
    return max(fits, key=lambda i: (scores[i], -costs[i], -i), default=None)


def best_statement(
    lead: Sequence[float],
    costs: Sequence[int],
    cap: int,
    blocked: Sequence[bool] | None = None,
    *,
    reach: Sequence[int] | None = None,
    least: float = 0.0,
) -> tuple[int, int] | None:
    """The best statement alone: the fewest lines ``(a, b)`` that hold the statement starting on
    a line ``a`` whole (``reach``, and the statements that start inside it), with the highest
    ``lead`` (above 0 and at least ``least``), costing at most ``cap``, off the ``blocked``
    lines; ties go to the cheaper, then the earlier. None when none fits.

    >>> best_statement([0.1, 0.9, 0.0, 0.5], [5, 5, 5, 5], 9, reach=[0, 2, 2, 3])
    (3, 3)
    >>> best_statement([0.1, 0.9, 0.0, 0.5], [5, 5, 5, 5], 9, reach=[0, 1, 2, 3])
    (1, 1)
    """
    best: tuple[float, int, int, int] | None = None  # (lead, -cost, -a, b) maximised
    for a, value in enumerate(lead):
        if value <= 0 or value < least:
            continue
        b = a if reach is None else reach[a]
        k = a
        while reach is not None and k < b:
            k += 1
            b = max(b, reach[k])
        if blocked is not None and any(blocked[a : b + 1]):
            continue
        cost = int(sum(costs[a : b + 1]))
        if cost <= cap and (best is None or (value, -cost, -a, b) > best):
            best = (value, -cost, -a, b)
    return None if best is None else (-best[2], best[3])


def cluster_count(n: int, max_clusters: int) -> int:
    """Topics for ``n`` results: 0 for none, 1 for up to 3, else ``round(sqrt(n / 2))``, capped."""
    if n <= 0:
        return 0
    if n <= 3:
        return 1
    return max(1, min(max_clusters, n, round(math.sqrt(n / 2))))


def cluster_labels(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """MiniBatchKMeans labels for the rows of ``vectors`` (in rank order), renumbered by first
    appearance so that label 0 is the best hit's topic. ``k`` is lowered to the number of
    distinct rows (identical rows cannot make distinct topics)."""
    n = len(vectors)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    distinct = len(np.unique(np.round(np.asarray(vectors, dtype=np.float64), 6), axis=0))
    k = min(k, distinct)
    if k <= 1:
        return np.zeros(n, dtype=np.int64)
    from sklearn.cluster import MiniBatchKMeans
    from threadpoolctl import threadpool_limits

    model = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=N_INIT, batch_size=1024)
    # one thread: on a few dozen rows OpenMP start-up costs ten times the work, more on a busy machine
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore")
        raw = model.fit_predict(np.asarray(vectors, dtype=np.float64))
    order: dict[int, int] = {}
    for label in raw:
        order.setdefault(int(label), len(order))
    return np.array([order[int(label)] for label in raw], dtype=np.int64)


def pick_units(
    units: Sequence[Unit], query_terms: set[str], limit: int, *, lang: str | None = None
) -> list[int]:
    """Indices of at most ``limit`` units to embed, spread over the chunks: each chunk gets an
    equal share, filled with its units of highest term overlap (signatures first for code),
    earlier units first on ties; a share a chunk cannot use passes on to the others. ``lang``:
    the language ``query_terms`` were read in (``content_terms``)."""
    if len(units) <= limit:
        return list(range(len(units)))
    by_chunk: dict[int, list[int]] = {}
    for i, u in enumerate(units):
        by_chunk.setdefault(u.chunk, []).append(i)
    ranked = {
        c: sorted(
            idx,
            key=lambda i: (
                -term_overlap(query_terms, content_terms(units[i].text, lang)),
                not units[i].signature,
                i,
            ),
        )
        for c, idx in by_chunk.items()
    }
    chosen: list[int] = []
    depth = 0
    while len(chosen) < limit:
        added = False
        for c in sorted(ranked):
            if depth < len(ranked[c]) and len(chosen) < limit:
                chosen.append(ranked[c][depth])
                added = True
        if not added:
            break
        depth += 1
    return sorted(chosen)
