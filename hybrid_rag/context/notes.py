"""The notes a budget fill adds to a context, in three lengths: the notes shrink before evidence.

A small budget spends its tokens on the quote that answers, not on saying that the budget is
full: ``ContextBuilder`` renders the longest form (``FULL``) that fits, else the short one
(``SHORT``), else none of them (``NONE``), and only then takes a quote back. The notes the
context started with (an unread question, a generator's failure) are kept at every length.

>>> fill_notes(FULL, 1, 1, 2, 128, quoted=True)[1]
'1 of 2 results not quoted: the budget of 128 tokens is full'
>>> fill_notes(SHORT, 1, 1, 2, 128, quoted=True)
['1 summary dropped, 1 of 2 results unquoted (budget)']
>>> fill_notes(NONE, 1, 1, 2, 128, quoted=True)
[]
"""

from __future__ import annotations

FULL, SHORT, NONE = 0, 1, 2
LENGTHS = (FULL, SHORT, NONE)


def fill_notes(
    length: int, missing: int, unquoted: int, total: int, budget: int, *, quoted: bool
) -> list[str]:
    """The fill's notes: ``missing`` topics' summaries dropped, ``unquoted`` of ``total`` results
    not quoted (``quoted``: whether anything is), at ``length``. "No evidence fits" is kept at
    every length: a context without quotes must say why."""
    if not quoted:
        return [f"no evidence fits the budget of {budget} tokens"] if total else []
    if length == FULL:
        out = []
        if missing:
            out.append(f"summaries of {missing} topic(s) dropped to fit the budget of {budget} tokens")
        if unquoted:
            out.append(f"{unquoted} of {total} results not quoted: the budget of {budget} tokens is full")
        return out
    if length == SHORT and (missing or unquoted):
        parts = []
        if missing:
            parts.append(f"{missing} summar{'y' if missing == 1 else 'ies'} dropped")
        if unquoted:
            parts.append(f"{unquoted} of {total} results unquoted")
        return [", ".join(parts) + " (budget)"]
    return []


def weak_note(length: int, conf: float) -> str:
    """The note that the quoted lines alone are weak evidence, at ``length`` (never dropped: it
    qualifies the evidence shown)."""
    if length == FULL:
        return (
            f"the quoted lines are weak evidence (retrieval confidence {conf:.2f}); "
            "a larger budget may quote better ones"
        )
    return "the quoted lines are weak evidence"
