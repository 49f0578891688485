"""The maths of context building, as pure functions: terms, scoring units, line windows, topics.

* **Terms**: ``indices.tokenize.content_terms`` (words and identifier parts, no stop words).
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

from hybrid_rag.indices.tokenize import content_terms

N_INIT = 3  # k-means restarts: fixed, so that a seed gives one answer
LINE_BASE_SCORE = 0.02  # a non-blank line is worth a little context even when it matches nothing

_WORD = re.compile(r"\w+")
# a sentence ends at . ! ? and a space; at the full-width 。！？ of Chinese and Japanese with none;
# at the danda । ॥ of Devanagari
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])\s*(?=\S)|(?<=[।॥])\s*(?=\S)")
_BLOCK_START = re.compile(r"^\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|>)")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_IMPORT = re.compile(r"^\s*(?:import\s+[\w.]|from\s+[\w.]+\s+import\b)")
_SIGNATURE = re.compile(
    r"^\s*(?:export\s+|pub(?:\([^)]*\))?\s+|public\s+|private\s+|protected\s+|static\s+|async\s+)*"
    r"(?:def|class|function|func|fn|interface|struct|enum|trait|impl|type|module)\b"
)


def term_overlap(query_terms: set[str], terms: Iterable[str]) -> float:
    """Share of ``query_terms`` found among ``terms``; 0 when there are no query terms."""
    if not query_terms:
        return 0.0
    return len(query_terms.intersection(terms)) / len(query_terms)


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


def best_window(
    scores: Sequence[float],
    costs: Sequence[int],
    cap: int,
    blocked: Sequence[bool] | None = None,
) -> tuple[int, int] | None:
    """The contiguous lines ``(a, b)`` (inclusive) with the highest total score whose costs sum
    to at most ``cap``, never crossing a ``blocked`` line; ties go to the cheaper, then the
    earlier window. Blank lines at either end are trimmed. None when no scored line fits.

    >>> best_window([0.1, 0.9, 0.0, 0.5], [5, 5, 1, 5], 11)
    (1, 3)
    >>> best_window([0.1, 0.9, 0.0, 0.5], [5, 5, 1, 5], 10)
    (0, 1)
    """
    n = len(scores)
    best: tuple[float, int, int, int] | None = None  # (score, -cost, -a, b) maximised
    a, total, gain = 0, 0, 0.0
    for b in range(n):
        if blocked is not None and blocked[b]:
            a, total, gain = b + 1, 0, 0.0
            continue
        total += costs[b]
        gain += scores[b]
        while a <= b and total > cap:
            total -= costs[a]
            gain -= scores[a]
            a += 1
        if a > b:
            continue
        lo, hi = a, b
        while lo < hi and scores[lo] <= 0:
            lo += 1
        while hi > lo and scores[hi] <= 0:
            hi -= 1
        if scores[lo] <= 0:
            continue
        cost = sum(costs[lo : hi + 1])
        key = (round(gain, 9), -cost, -lo, hi)
        if best is None or key > best:
            best = key
    return None if best is None else (-best[2], best[3])


def best_line(
    scores: Sequence[float], costs: Sequence[int], cap: int, blocked: Sequence[bool] | None = None
) -> int | None:
    """The one line with the highest score (above 0) that costs at most ``cap``, off the
    ``blocked`` lines; ties go to the cheaper, then the earlier line. None when none fits.

    >>> best_line([0.1, 0.9, 0.9, 0.5], [5, 9, 7, 5], 8)
    2
    """
    fits = [
        i
        for i in range(len(scores))
        if scores[i] > 0 and costs[i] <= cap and not (blocked is not None and blocked[i])
    ]
    return max(fits, key=lambda i: (scores[i], -costs[i], -i), default=None)


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


def centroid(vectors: np.ndarray) -> np.ndarray:
    """The unit-length mean of the rows (the zero vector stays zero)."""
    mean = np.asarray(vectors, dtype=np.float64).mean(axis=0)
    norm = np.linalg.norm(mean)
    return mean / norm if norm > 0 else mean


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
