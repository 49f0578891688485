"""The callers' and callees' signatures of the one definition a question is about, for the context
(``context.edges: signatures``; ``hybrid_rag/context/edges.py`` fits them in the budget).

A question is about one definition when ``ranking.identifier_tokens`` finds exactly one name in it
and that name names definitions of one qualified name (``what does Pool.take do?``, ``where is
parse_filter used?``); anything else gets no edges. The edges are one level: the definitions whose
calls resolve to it (``questions.callers``), then the definitions its calls resolve to
(``questions.callees``), each once, resolved ones only (an ambiguous call names no one signature),
in the answers' order: callers by path and line, callees by the line of their first call.
"""

from __future__ import annotations

from dataclasses import dataclass

from hybrid_rag.symbols.model import Symbol
from hybrid_rag.symbols.question_names import identifier_tokens
from hybrid_rag.symbols.questions import callees, callers, targets_of
from hybrid_rag.symbols.references import RESOLVED, ReferenceSource, Show, _same

CALLED_BY, CALLS = "called by", "calls"


@dataclass(frozen=True)
class Edge:
    """A caller (``CALLED_BY``) or callee (``CALLS``) of the question's definition."""

    direction: str
    symbol: Symbol

    def line(self, show: Show = _same) -> str:
        s = self.symbol
        signature = " ".join(s.signature.split()) or s.qualified_name
        return f"{self.direction}: {signature} ({show(s.path)}:{s.start_line}-{s.end_line})"


def question_definition(source: ReferenceSource, question: str, state: int | None) -> list[Symbol]:
    """The definitions the question is about: those of its one identifier, when they share one
    qualified name (overloads, a property's getter and setter); else none."""
    tokens = identifier_tokens(question)
    if len(tokens) != 1:
        return []
    targets = targets_of(source, tokens[0].text, state)
    if not targets or len({t.qualified_name for t in targets}) != 1:
        return []
    return targets


def edges_of(source: ReferenceSource, question: str, state: int | None) -> tuple[str, list[Edge]]:
    """The qualified name the question is about ("" when none) and its callers' and callees'
    definitions, each once."""
    targets = question_definition(source, question, state)
    if not targets:
        return "", []
    name = targets[0].qualified_name
    ids = {t.id for t in targets}
    out: list[Edge] = []
    seen: set[int] = set(ids)
    for caller in callers(source, name, state=state).callers:
        s = caller.symbol
        if s is not None and not caller.ambiguous and s.id not in seen:
            seen.add(s.id)
            out.append(Edge(CALLED_BY, s))
    for callee in callees(source, name, state=state)[1]:
        if callee.status == RESOLVED:
            s = callee.uses[0].targets[0]
            if s.id not in seen:
                seen.add(s.id)
                out.append(Edge(CALLS, s))
    return name, out


def edge_lines(
    source: ReferenceSource, question: str, state: int | None, show: Show = _same
) -> tuple[str, list[str], list[str]]:
    """The definition's qualified name, its callers' lines and its callees' lines (``Edge.line``)."""
    name, found = edges_of(source, question, state)
    return (
        name,
        [e.line(show) for e in found if e.direction == CALLED_BY],
        [e.line(show) for e in found if e.direction == CALLS],
    )
