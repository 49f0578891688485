"""Which lines of a text match: the share of query terms a line holds, and the best window of
scored lines under a cost cap. Pure functions, shared by a result's matching lines
(``retrieval/matching.py``) and the context's quotes (``context/evidence.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def term_overlap(query_terms: set[str], terms: Iterable[str]) -> float:
    """Share of ``query_terms`` found among ``terms``; 0 when there are no query terms."""
    if not query_terms:
        return 0.0
    return len(query_terms.intersection(terms)) / len(query_terms)


def best_window(
    scores: Sequence[float],
    costs: Sequence[int],
    cap: int,
    blocked: Sequence[bool] | None = None,
    *,
    reach: Sequence[int] | None = None,
    peak_first: bool = False,
    lead: Sequence[float] | None = None,
    least: float = 0.0,
) -> tuple[int, int] | None:
    """The contiguous lines ``(a, b)`` (inclusive) with the highest total score whose costs sum
    to at most ``cap``, never crossing a ``blocked`` line; ties go to the cheaper, then the
    earlier window. Blank lines at either end are trimmed. None when no scored line fits.

    ``reach`` (``statement_reach``): a window that holds a statement's first line holds its last
    (whole statements; it may start inside one). ``peak_first``: the window with the best line
    wins, the highest total among those (the lines that answer, not many lines that half match).
    ``lead``: per line, the score of the best statement that starts on it (0: none); given, a
    window's best line is its best whole statement, it must hold one, of at least ``least``, and
    ``peak_first`` is implied (a piece of a statement alone is never the quote's reason).

    >>> best_window([0.1, 0.9, 0.0, 0.5], [5, 5, 1, 5], 11)
    (1, 3)
    >>> best_window([0.1, 0.9, 0.0, 0.5], [5, 5, 1, 5], 10)
    (0, 1)
    >>> scores = [.35, .35, .6]
    >>> best_window(scores, [5, 5, 9], 10), best_window(scores, [5, 5, 9], 10, peak_first=True)
    ((0, 1), (2, 2))
    >>> best_window([.5, .9, .1], [5, 5, 5], 10), best_window([.5, .9, .1], [5, 5, 5], 10, reach=[0, 2, 2])
    ((0, 1), (1, 2))
    """
    n = len(scores)
    s = np.asarray(scores, dtype=np.float64)
    pc = np.concatenate([[0], np.cumsum(np.asarray(costs, dtype=np.int64))])
    ps = np.concatenate([[0.0], np.cumsum(s)])
    if lead is not None:
        peak_first = True
    top = np.asarray(lead if lead is not None else scores, dtype=np.float64)
    bad = [-1] * n  # per line h: the last line j <= h whose statement goes on past h
    if reach is not None:
        for j, r in enumerate(reach):
            for h in range(j, min(r, n)):
                bad[h] = j
    # plain floats and ints: the same float64 values, without numpy's cost per element read
    sl, pcl, psl, topl = s.tolist(), pc.tolist(), ps.tolist(), top.tolist()
    # without reach or lead, and no score below 0, a window ending on an unscored line trims back to
    # one the scored line before it ends, which scores more (each positive score >= 1e-6: more even
    # at the key's 9 decimals) or is the same: only the scored ends are tried
    scored_ends = reach is None and lead is None and all(v == 0 or v >= 1e-6 for v in sl)
    best: tuple[float, float, int, int, int] | None = None  # (peak, score, -cost, -a, b) maximised
    a = 0
    for b in range(n):
        if blocked is not None and blocked[b]:
            a = b + 1
            continue
        if scored_ends and sl[b] <= 0:
            continue
        while a <= b and pcl[b + 1] - pcl[a] > cap:
            a += 1
        lo, hi = max(a, bad[b] + 1), b
        if lo > hi:
            continue
        while lo < hi and sl[lo] <= 0:
            lo += 1
        while hi > lo and sl[hi] <= 0 and bad[hi - 1] < lo:
            hi -= 1
        if sl[lo] <= 0:
            continue
        peak = max(topl[lo : hi + 1]) if peak_first else 0.0
        if lead is not None and (peak <= 0 or peak < least):
            continue
        key = (round(peak, 9), round(psl[b + 1] - psl[lo], 9), -(pcl[hi + 1] - pcl[lo]), -lo, hi)
        if best is None or key > best:
            best = key
    return None if best is None else (-best[3], best[4])
