"""The lines of a result that match its query: what a result list shows of a chunk (the web page's
preview), instead of the chunk's first lines.

A line scores the share of the query's content terms it holds (``lang.tokenize.content_terms``:
words and identifier parts, no stop words); the match is the window of at most ``MATCH_LINES``
lines with the highest total (``lang.windows.best_window``: ties to the cheaper, then the
earlier window; blank lines at its ends trimmed). A chunk with no query term, or a query of stop
words, matches on its first lines. Cheap on purpose (no embedding): every hit of every query
carries it (``QueryResult.to_dict``'s ``match``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection
from itertools import accumulate

from hybrid_rag.lang.tokenize import content_terms
from hybrid_rag.lang.windows import best_window, term_overlap

MATCH_LINES = 6


def matching_lines(
    text: str,
    query: str,
    start_line: int,
    max_lines: int = MATCH_LINES,
    terms: Collection[str] | None = None,
) -> tuple[int, int]:
    """The 1-based, inclusive line range of ``text`` (whose first line is ``start_line``) that best
    matches ``query``, at most ``max_lines`` long; ``terms``: the query's content terms already
    read (``question_terms.content_terms``, once a question), else read here.

    >>> code = "import os\\n\\ndef fuse(runs):\\n    # ties break by chunk id\\n    return runs"
    >>> matching_lines(code, "how do ties break?", 10)
    (13, 13)
    """
    lines = text.split("\n")
    terms = set(content_terms(query)) if terms is None else set(terms)
    scores = _line_scores(terms, text, lines)
    window = best_window(scores, [1] * len(lines), max(max_lines, 1)) if any(scores) else None
    if window is None:
        return start_line, start_line + min(len(lines), max(max_lines, 1)) - 1
    return start_line + window[0], start_line + window[1]


def _line_scores(terms: set[str], text: str, lines: list[str]) -> list[float]:
    """Each line's ``term_overlap`` with ``terms``. In ASCII text only the lines that hold a term's
    letters (lowercased) are read: each of an ASCII line's content terms is a lowercased piece of
    it (``lang.analyzers.Analyzer.terms`` without a stemmer), so the others score 0 unread."""
    if not terms:
        return [0.0] * len(lines)
    if not text.isascii():
        return [term_overlap(terms, content_terms(line)) for line in lines]
    lowered = text.lower()
    ends = list(accumulate(len(line) + 1 for line in lines))  # each line's end, its newline past
    pattern = re.compile("|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)))
    holding = {bisect_right(ends, m.start()) for m in pattern.finditer(lowered)}
    return [term_overlap(terms, content_terms(line)) if i in holding else 0.0 for i, line in enumerate(lines)]
