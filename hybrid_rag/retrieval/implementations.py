"""A facade's implementation follows it: ``features.implementation`` (issue 37, the weakest
languages).

A question about what code does is often answered best by a facade: a C++ header's declaration
with its doc comment (``void Cleaner::CleanAll();`` in ``clean.h``), a Rust trait method whose
doc says what it does and whose body only calls the constructor of another file's adaptor
(``fn tee(self) -> (Tee<Self>, Tee<Self>) { tee::new(self) }`` in ``lib.rs``), a TypeScript
barrel. Dense and BM25 both rank the facade first, and the file that does the work far below:
the facade holds the question's words, the implementation the code. Here each of the first
``DEPTH`` results that holds such a facade pulls its implementation up to just below it:

* a **declaration** (a function or method whose signature ends with ``;``: no body) pulls the
  definition of the same qualified name with a body, in another file (``Cleaner::CleanAll`` of
  ``clean.cc``);
* a **delegating** function or method (at most ``SHORT`` lines of code after its doc comment)
  pulls the definition of the type its signature returns (``Tee`` of ``tee.rs``) or of the
  function its body calls (``exhaustMap`` of ``return exhaustMap(identity)``, from the
  reference index): a struct, class, enum or type, or a top-level function, defined once
  outside tests, in another file.

Only chunks already among the candidates move (the rule orders; it fetches nothing), at most
``MOST`` of them, never above their facade, never down. No symbol index or no facade: nothing
moves.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hybrid_rag.retrieval.definition_first import question_words
from hybrid_rag.symbols.model import Symbol
from hybrid_rag.symbols.search import FUNCTION_KINDS, SymbolSource, declares_only, is_test_path
from hybrid_rag.types import ScoredChunk

IMPLEMENTATION = "implementation"  # a breakdown key: the facade rank the chunk was pulled under
DEPTH = 5  # facades looked for among the first results
MOST = 3  # implementations pulled at most
SHORT = 6  # lines of a delegating body (after its doc comment and attributes)
MIN_SHARED = 2  # question words a facade shares with the question, among several in its chunk
_TYPES = frozenset({"struct", "class", "enum", "type", "interface", "trait", "union"})
_RETURNS = re.compile(r"\)\s*(?:->|:)\s*(.+?)\s*(?:where\b|\{|$)")
_TYPE_NAME = re.compile(r"\b([A-Z][A-Za-z0-9_]*)\b")
_NOT_TYPES = frozenset({"Self", "Option", "Result", "Vec", "Box", "Some", "None", "String", "T"})


def pull_implementations(
    scored: list[ScoredChunk], source: SymbolSource, state: int | None, question: str = ""
) -> list[ScoredChunk]:
    """``scored`` with each facade's implementation placed just below it (module docstring)."""
    if len(scored) < 2:
        return scored
    words = {_stem(w) for w in question_words(question)}
    heads = scored[:DEPTH]
    symbols = _symbols_of(source, heads, state)
    wanted: list[tuple[int, Symbol, str]] = []  # (facade rank, facade symbol, name looked up)
    for rank, c in enumerate(heads):
        facades = [
            s
            for s in symbols[c.path]
            if s.chunk_id == c.id
            and s.kind in FUNCTION_KINDS
            and (declares_only(s.signature) or _delegates(c, s))
        ]
        for s in _named_by(facades, words):
            if declares_only(s.signature):
                wanted.append((rank, s, s.name))
            else:
                wanted.extend((rank, s, name) for name in _returned_types(s.signature))
                wanted.extend((rank, s, name) for name in _callees(source, s, state))
    if not wanted:
        return scored
    found: dict[str, list[Symbol]] = {}
    for s in source.symbols(names=sorted({n for _, _, n in wanted}), state=state):
        found.setdefault(s.name.lower(), []).append(s)
    by_id = {c.id: i for i, c in enumerate(scored)}
    pulls: dict[int, int] = {}  # target chunk id -> facade rank
    for rank, facade, name in wanted:
        target = _target(facade, name, found.get(name.lower(), []))
        if target is None or target.chunk_id is None or target.chunk_id not in by_id:
            continue
        if by_id[target.chunk_id] > rank and target.chunk_id not in pulls and len(pulls) < MOST:
            pulls[target.chunk_id] = rank
    if not pulls:
        return scored
    return _placed(scored, pulls)


def _symbols_of(
    source: SymbolSource, heads: Sequence[ScoredChunk], state: int | None
) -> dict[str, list[Symbol]]:
    """The definitions in the heads' chunks, by stored path: one read of their document revisions
    where the source has it (the store), else one lookup a path."""
    out: dict[str, list[Symbol]] = {c.path: [] for c in heads}
    of_documents = getattr(source, "symbols_of", None)
    if of_documents is None:
        return {path: source.symbols(path=path, state=state) for path in out}
    for s in of_documents({c.chunk.document_id for c in heads}, chunk_ids={c.id for c in heads}):
        out.setdefault(s.path, []).append(s)
    return out


def _stem(word: str) -> str:
    """``cleaning``, ``cleaned``, ``cleans`` -> ``clean``: enough to match a doc comment's verb."""
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _named_by(facades: list[Symbol], words: set[str]) -> list[Symbol]:
    """The facades of one chunk that the question's words point at: the one when it is alone,
    else those whose name and doc share the most words with the question (none when none does)."""
    if not facades:
        return []
    overlap = [(len(words & {_stem(w) for w in question_words(f"{s.name} {s.doc}")}), s) for s in facades]
    best = max(o for o, _ in overlap)
    enough = 1 if len(facades) == 1 else MIN_SHARED
    return [s for o, s in overlap if o == best] if best >= enough else []


def _delegates(chunk: ScoredChunk, symbol: Symbol) -> bool:
    """Whether ``symbol``'s body is short: a few lines after its doc comment and attributes."""
    lines = chunk.text.splitlines()
    first, last = symbol.start_line - chunk.start_line, symbol.end_line - chunk.start_line
    body = [
        line.strip()
        for line in lines[max(first, 0) : last + 1]
        if line.strip() and not line.strip().startswith(("//", "/*", "*", "#", "@"))
    ]
    return 0 < len(body) <= SHORT


def _callees(source: SymbolSource, symbol: Symbol, state: int | None) -> list[str]:
    """The names a delegating body calls (``exhaustMap`` of ``return exhaustMap(identity)``), from
    the reference index; none where the source has no references."""
    read = getattr(source, "references", None)
    if read is None:
        return []
    lines = (symbol.start_line, symbol.end_line)
    calls = read(document_ids=[symbol.document_id], kinds=["call"], lines=lines, state=state)
    return list(dict.fromkeys(r.name for r in calls if r.name != symbol.name))


def _returned_types(signature: str) -> list[str]:
    """The type names a signature returns (``-> (Tee<Self>, Tee<Self>)`` -> ``Tee``)."""
    m = _RETURNS.search(signature)
    if m is None:
        return []
    names = [n for n in _TYPE_NAME.findall(m.group(1)) if n not in _NOT_TYPES]
    return list(dict.fromkeys(names))


def _target(facade: Symbol, name: str, candidates: Sequence[Symbol]) -> Symbol | None:
    """The one implementation ``name`` names for ``facade``: in another file, outside tests."""
    if declares_only(facade.signature) and name == facade.name:
        bodies = [
            s
            for s in candidates
            if s.qualified_name == facade.qualified_name
            and s.path != facade.path
            and s.kind in FUNCTION_KINDS
            and not declares_only(s.signature)
        ]
    else:
        bodies = [
            s
            for s in candidates
            if s.name == name
            and s.path != facade.path
            and (s.kind in _TYPES or (s.kind == "function" and s.parent is None))
        ]
    bodies = [s for s in bodies if not is_test_path(s.path)]
    return bodies[0] if len(bodies) == 1 else None


def _placed(scored: list[ScoredChunk], pulls: dict[int, int]) -> list[ScoredChunk]:
    """``scored`` with each pulled chunk right after its facade (the order of pulls kept)."""
    moved = {c.id: c for c in scored if c.id in pulls}
    out: list[ScoredChunk] = []
    for i, c in enumerate(scored):
        if c.id in pulls:
            continue
        out.append(c)
        out.extend(_scored(moved[t], c.score, rank) for t, rank in pulls.items() if rank == i)
    return _monotone(out)


def _scored(target: ScoredChunk, facade_score: float, rank: int) -> ScoredChunk:
    breakdown: dict[str, Any] = {**target.breakdown, IMPLEMENTATION: float(rank + 1)}
    return replace(target, score=max(target.score, facade_score), breakdown=breakdown)


def _monotone(out: list[ScoredChunk]) -> list[ScoredChunk]:
    """Scores made non-increasing down the list (a pulled chunk keeps its facade's score at most;
    the ones below keep theirs unless above it), so a later sort keeps this order."""
    fixed: list[ScoredChunk] = []
    for c in out:
        if fixed and c.score > fixed[-1].score:
            c = replace(c, score=fixed[-1].score)
        fixed.append(c)
    return fixed
