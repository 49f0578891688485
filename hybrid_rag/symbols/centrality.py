"""A centrality prior: PageRank over the files' reference graph (as aider's repository map ranks
files), for questions about a repository's architecture (``retrieval.centrality_prior``, off by
default: RESULTS.md#centrality-prior measured it).

The graph: one node per code file of the store state; for each stored use of a name (a call, a
type or base class named, an import), an edge from the using file to each file defining that
name, weighted 1 / the number of files defining it (a name defined in forty files says little
about which one is used: resolution by name, as aider's map does, no per-use resolution). A file's
own uses of its own names are no edge. PageRank (damping 0.85, networkx) over it, scaled so the
most central file is 1. Computed once per store state and kept (``state_cache``): a state's rows
never change.

``is_architecture`` says whether a question asks about the whole (``how is the code organised?``,
``what are the main components?``, ``give me an overview of the architecture``): architecture
words, and no identifier of the code (a question naming one is about that definition).
``apply_centrality`` then moves each result up by ``weight * rank`` standard deviations of the
results' scores (the scale of ``retrieval/priors.py``), stable.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from hybrid_rag.code.bindings import BINDING
from hybrid_rag.symbols import state_cache
from hybrid_rag.symbols.members import is_member
from hybrid_rag.symbols.question_names import identifier_tokens
from hybrid_rag.symbols.references import ReferenceSource
from hybrid_rag.types import ScoredChunk

CENTRALITY = "centrality"  # the breakdown's key
DAMPING = 0.85
_ARCHITECTURE = re.compile(
    r"\b(architecture|architectural|overview|high[- ]level|big picture|structured?|organi[sz]ed|"
    r"organi[sz]ation|layout|design|components?|modules?|subsystems?|layers?|entry ?points?|"
    r"main (?:parts|pieces|classes|files)|how (?:does|do) (?:the|this) (?:\w+ ){0,3}work|"
    r"where (?:does|do) (?:\w+ ){0,3}(?:start|begin)|flow|pipeline)\b",
    re.IGNORECASE,
)


def is_architecture(question: str) -> bool:
    """Whether ``question`` asks about the repository as a whole (module docstring).

    >>> is_architecture("How is this project organised into modules?")
    True
    >>> is_architecture("what does parse_filter do?"), is_architecture("How do I hide an option?")
    (False, False)
    """
    if not _ARCHITECTURE.search(question):
        return False
    return not any(t.code for t in identifier_tokens(question))


def page_rank(edges: Mapping[tuple[str, str], float], nodes: Sequence[str]) -> dict[str, float]:
    """PageRank of ``nodes`` over weighted ``edges`` (from, to), scaled to a maximum of 1; every
    node 1 when there is no edge."""
    import networkx as nx

    if not nodes:
        return {}
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_weighted_edges_from((a, b, w) for (a, b), w in edges.items())
    if graph.number_of_edges() == 0:
        return dict.fromkeys(nodes, 1.0)
    ranks = nx.pagerank(graph, alpha=DAMPING, weight="weight")
    top = max(ranks.values())
    return {n: r / top for n, r in ranks.items()}


def file_ranks(source: ReferenceSource, state: int | None) -> dict[str, float]:
    """Each code file's centrality at ``state`` (stored paths; module docstring), computed once a
    state."""

    def compute() -> dict[str, float]:
        defined: dict[str, set[str]] = defaultdict(set)
        paths: set[str] = set()
        for symbol in source.symbols(state=state):
            if is_member(symbol):  # a field or re-export is no definition a use points to
                continue
            defined[symbol.name].add(symbol.path)
            paths.add(symbol.path)
        edges: dict[tuple[str, str], float] = defaultdict(float)
        for ref in source.references(state=state):
            targets = defined.get(ref.name)
            if not targets or ref.kind == BINDING:
                continue
            paths.add(ref.path)
            share = 1.0 / len(targets)
            for target in targets:
                if target != ref.path:
                    edges[(ref.path, target)] += share
        return page_rank(edges, sorted(paths))

    cache = state_cache.for_state(source, state)
    return compute() if cache is None else cache.read(("pagerank",), compute)


def apply_centrality(
    results: Sequence[ScoredChunk], ranks: Mapping[str, float], weight: float
) -> list[ScoredChunk]:
    """``results`` each moved up by ``weight * rank of its file`` standard deviations of their
    scores, re-sorted (stable); a moved result records what it added as ``breakdown["centrality"]``."""
    if not results or weight <= 0 or not ranks:
        return list(results)
    scores = np.array([r.score for r in results], dtype=np.float64)
    spread = float(scores.std()) if len(results) > 1 else 0.0
    spread = spread if spread > 0 else 1.0
    out = []
    for r in results:
        rank = ranks.get(r.path, 0.0)
        add = weight * rank * spread
        out.append(replace(r, score=r.score + add, breakdown={**r.breakdown, CENTRALITY: add}) if add else r)
    order = sorted(range(len(out)), key=lambda i: -out[i].score)
    return [out[i] for i in order]
