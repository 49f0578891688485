"""The callers' and callees' signatures of the definition a question is about, fitted into the
context's budget (``context.edges: signatures``, or per call; the edges themselves come from
``hybrid_rag/symbols/edges.py``).

They go in a section of their own before the Sources list::

    ## Callers and callees of Pool.take
    called by: def checkout(pool): (app.py:4-6)
    calls: def _grow(self): (pool.py:12-14)

A caller and a callee alternate (the first of each before the second of either), so a small
budget shows both sides. The context is first built at the whole budget; when the edges do not
all fit in what it leaves, it is built again with up to ``EDGE_SHARE`` of the budget kept for
them (the quotes keep the rest), and used when it still quotes evidence. The whole text is
counted again: never over the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import chain, zip_longest

from hybrid_rag.context.render import Context
from hybrid_rag.errors import InputError

EDGE_SHARE = 0.25  # the most of the budget the edges may take from the quotes
MODES = ("off", "signatures")
_SOURCES = "\n## Sources\n"


def check_edges(mode: str) -> str:
    """``mode`` when it is one of ``MODES``, else an InputError naming them."""
    if mode not in MODES:
        raise InputError(f"unknown edges mode {mode!r}: off or signatures")
    return mode


def interleaved(called_by: Sequence[str], calls: Sequence[str]) -> list[str]:
    """Callers and callees alternating, each list's order kept.

    >>> interleaved(["called by: a", "called by: b"], ["calls: c"])
    ['called by: a', 'calls: c', 'called by: b']
    """
    return [x for x in chain.from_iterable(zip_longest(called_by, calls)) if x is not None]


def heading(name: str) -> str:
    return f"## Callers and callees of {name}"


def attach(context: Context, name: str, lines: Sequence[str], count: Callable[[str], int]) -> Context:
    """``context`` with as many of ``lines`` (in order) as its budget holds, in their section."""
    text = context.text
    at = text.rfind(_SOURCES)
    if at < 0 or not lines:
        return context
    kept = list(lines)
    while kept:
        block = "\n" + heading(name) + "\n" + "\n".join(kept) + "\n"
        new = text[:at] + block + text[at:]
        tokens = count(new)
        if tokens <= context.max_tokens:
            return replace(context, text=new, token_count=tokens, edges=tuple(kept), edges_of=name)
        kept.pop()
    return context


def with_edges(
    context: Context,
    name: str,
    lines: Sequence[str],
    count: Callable[[str], int],
    rebuild: Callable[[int], Context],
) -> Context:
    """``context`` with the edges ``lines`` of ``name`` within its budget (module docstring);
    ``rebuild(b)`` builds the same context at budget ``b``."""
    if not lines or not context.quotes:
        return attach(context, name, lines, count)
    first = attach(context, name, lines, count)
    if len(first.edges) == len(lines):
        return first
    whole = count("\n" + heading(name) + "\n" + "\n".join(lines) + "\n")
    keep = min(whole, int(context.max_tokens * EDGE_SHARE))
    if keep <= 0 or keep >= context.max_tokens:
        return first
    smaller = rebuild(context.max_tokens - keep)
    if not smaller.quotes:
        return first
    second = attach(replace(smaller, max_tokens=context.max_tokens), name, lines, count)
    return second if len(second.edges) > len(first.edges) else first
