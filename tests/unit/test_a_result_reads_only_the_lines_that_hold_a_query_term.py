"""A result's matching lines read (tokenise) only the lines that hold a query term's letters, and
the window they pick is the one reading every line picks; the window search tries only windows
that end on a scored line, with the same answer as every window's (RESULTS.md#query-time)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_rag.lang import windows
from hybrid_rag.lang.tokenize import content_terms
from hybrid_rag.lang.windows import best_window, term_overlap
from hybrid_rag.retrieval import matching
from hybrid_rag.retrieval.matching import matching_lines

CODE = "\n".join(
    [
        "import os",
        "",
        "def open_pool(size):",
        "    # the pool hands out connections",
        "    return Pool(size)",
        "",
        "class Pool:",
        "    def checkin(self, connection):",
        "        self.idle.append(connection)",
        "        return None",
    ]
)


def every_line(text: str, query: str, start: int) -> tuple[int, int]:
    """The window reading every line, as matching_lines did before."""
    lines = text.split("\n")
    terms = set(content_terms(query))
    scores = [term_overlap(terms, content_terms(line)) for line in lines]
    window = best_window(scores, [1] * len(lines), matching.MATCH_LINES) if any(scores) else None
    if window is None:
        return start, start + min(len(lines), matching.MATCH_LINES) - 1
    return start + window[0], start + window[1]


def test_only_lines_holding_a_term_are_tokenised(monkeypatch) -> None:
    read: list[str] = []

    def counting(text: str, lang: str | None = None) -> list[str]:
        read.append(text)
        return content_terms(text, lang)

    monkeypatch.setattr(matching, "content_terms", counting)
    got = matching_lines(CODE, "how is a connection returned to the pool?", 10)
    assert got == every_line(CODE, "how is a connection returned to the pool?", 10)
    lines = CODE.split("\n")
    assert read[0] == "how is a connection returned to the pool?"  # the query, once
    assert set(read[1:]) <= {line for line in lines if "pool" in line.lower() or "connection" in line}
    assert "import os" not in read and "" not in read[1:]


@given(
    st.lists(
        st.text(alphabet="ab_ CX\tz1é", max_size=12),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["ab", "a b", "cx z1", "é", "Ab_cx", "z"]),
)
@settings(max_examples=150, deadline=None)
def test_the_window_is_the_one_reading_every_line(lines: list[str], query: str) -> None:
    text = "\n".join(lines)
    assert matching_lines(text, query, 1) == every_line(text, query, 1)


def windows_by_enumeration(
    scores: list[float], costs: list[int], cap: int, blocked: list[bool] | None, peak_first: bool
) -> tuple[int, int] | None:
    """Every (a, b), ends trimmed of unscored lines, ranked by best_window's key."""
    best = None
    for a, b in itertools.combinations_with_replacement(range(len(scores)), 2):
        if sum(costs[a : b + 1]) > cap or (blocked and any(blocked[a : b + 1])):
            continue
        lo, hi = a, b
        while lo < hi and scores[lo] <= 0:
            lo += 1
        while hi > lo and scores[hi] <= 0:
            hi -= 1
        if scores[lo] <= 0:
            continue
        peak = max(scores[lo : hi + 1]) if peak_first else 0.0
        key = (round(peak, 9), round(sum(scores[lo : hi + 1]), 9), -sum(costs[lo : hi + 1]), -lo, hi)
        best = key if best is None or key > best else best
    return None if best is None else (-best[3], best[4])


@given(
    st.lists(
        st.tuples(st.sampled_from([0, 0, 1, 2, 3, 4, 6, 12]), st.sampled_from([0, 1, 1, 2, 5])), max_size=10
    ),
    st.integers(0, 12),
    st.one_of(st.none(), st.lists(st.booleans(), min_size=10, max_size=10)),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_the_best_window_is_the_best_of_every_window(
    rows: list[tuple[int, int]], cap: int, blocked: list[bool] | None, peak_first: bool
) -> None:
    scores = [s / 12 for s, _ in rows]
    costs = [c for _, c in rows]
    block = None if blocked is None else blocked[: len(rows)]
    got = windows.best_window(scores, costs, cap, block, peak_first=peak_first)
    assert got == windows_by_enumeration(scores, costs, cap, block, peak_first)
