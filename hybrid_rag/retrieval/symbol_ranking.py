"""Identifiers that find their definition: the symbol list fused into a query's ranking.

A question that names an identifier of the corpus (``ConnectionPool``, ``parse_filter``,
``ClientOptions.compression``, ``Foo::bar``) should rank the chunk holding that definition first.
``identifier_tokens`` picks the words of a query that look like code (an underscore, an inner
capital, a qualifier, backticks or a call's parentheses), or else a plain word when it is the
query's only one besides stop words and question words (it counts only as an exact name);
``symbol_hits`` looks them up in the symbol index and scores the chunk holding each definition:

* 1.0 the name (or the qualified name) as written; 0.7 equal ignoring case;
* 0.4 a part: the last part of a qualified token whose qualifier does not match, or its qualifier;
* divided by the square root of the number of definitions sharing the name (``get`` in forty
  classes says little about which one), halved for definitions under tests;
* a Rust ``impl`` block named like a type the corpus defines is not the type's definition: the
  struct, enum or trait is (``Deserializer``'s ``impl<R: Read> Deserializer<R>`` blocks neither
  share its score nor are boosted for it; their methods are, by their own names); so for a
  re-export, field or enum variant named like a definition (``symbols/members.py``).

``boost`` adds the list to the fused ranking: ``weight * score`` standard deviations of the fused
scores of the query's candidates, the scale ``retrieval/priors.py`` uses, so the same weight means
the same on every fusion mode. A chunk no other list found enters at the lowest fused score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_rag.retrieval.fusion import Fused, rank_order
from hybrid_rag.symbols.members import is_member, secondary
from hybrid_rag.symbols.model import Symbol
from hybrid_rag.symbols.question_names import IdentifierToken, identifier_tokens
from hybrid_rag.symbols.search import SymbolSource, is_test_path, split_qualified
from hybrid_rag.types import Hit

SYMBOLS = "symbols"  # the list's name among a query's runs and in a result's breakdown
EXACT, CASELESS, PART = 1.0, 0.7, 0.4
WORD = 1.0  # a plain word that is exactly a definition's name (``chunked``, ``Builder``)


def symbol_hits(
    source: SymbolSource,
    query: str,
    *,
    state: int | None,
    allowed: np.ndarray | None = None,
) -> list[Hit]:
    """The chunks holding a definition the query names, scored as in the module docstring, best
    first (ties by chunk id); [] when the query names none."""
    return hits_of(named_symbols(source, query, state=state), allowed)


@dataclass(frozen=True)
class NamedSymbol:
    """A definition a query names: the word that names it, how well (``EXACT``, ``CASELESS``,
    ``PART``, ``WORD``) and how many definitions share its name."""

    token: IdentifierToken
    symbol: Symbol
    strength: float
    sharing: int


def named_symbols(
    source: SymbolSource,
    query: str,
    *,
    state: int | None,
    members: bool = True,
    tokens: Sequence[IdentifierToken] | None = None,
) -> list[NamedSymbol]:
    """Every definition of the symbol index that a word of ``query`` names (one lookup);
    ``members`` False: no re-export, field or variant row (``features.member_symbols``)."""
    tokens = identifier_tokens(query) if tokens is None else tokens
    if not tokens:
        return []
    wanted = {p.lower() for t in tokens for p in split_qualified(t.text)}
    found = [s for s in source.symbols(names=sorted(wanted), state=state) if members or not is_member(s)]
    by_name: dict[str, list[Symbol]] = {}
    for symbol in found:
        by_name.setdefault(symbol.name.lower(), []).append(symbol)
    for name, group in by_name.items():
        if any(s.kind == "impl" for s in group) and any(s.kind != "impl" for s in group):
            group = by_name[name] = [s for s in group if s.kind != "impl"]
        by_name[name] = secondary(group)  # a re-export, field or variant yields to a definition
    out: list[NamedSymbol] = []
    for token in tokens:
        for symbol, strength in _matches(token, by_name):
            if symbol.chunk_id is not None:
                sharing = len(by_name.get(symbol.name.lower(), ())) or 1
                out.append(NamedSymbol(token, symbol, strength, sharing))
    return out


def hits_of(named: Sequence[NamedSymbol], allowed: np.ndarray | None = None) -> list[Hit]:
    """The symbol list: each named definition's chunk scored as in the module docstring."""
    best: dict[int, float] = {}
    for n in named:
        assert n.symbol.chunk_id is not None
        score = n.strength / math.sqrt(n.sharing) * (0.5 if is_test_path(n.symbol.path) else 1.0)
        if score > best.get(n.symbol.chunk_id, 0.0):
            best[n.symbol.chunk_id] = score
    if allowed is not None:
        keep = set(allowed.tolist())
        best = {i: s for i, s in best.items() if i in keep}
    return [Hit(i, s) for i, s in rank_order(best)]


def _matches(token: IdentifierToken, by_name: Mapping[str, Sequence[Symbol]]) -> list[tuple[Symbol, float]]:
    parts = split_qualified(token.text)
    last = parts[-1]
    out: list[tuple[Symbol, float]] = []
    for symbol in by_name.get(last.lower(), ()):
        if len(parts) > 1:
            have = [p.lower() for p in split_qualified(symbol.qualified_name)]
            if have[-len(parts) :] == [p.lower() for p in parts]:
                out.append((symbol, EXACT if _tail(symbol.qualified_name, parts) else CASELESS))
            else:
                out.append((symbol, PART))
        elif symbol.name == last:
            out.append((symbol, EXACT if token.code else WORD))
        elif token.code:
            out.append((symbol, CASELESS))
    if len(parts) > 1:  # the qualifier names a definition too (``ClientOptions`` of ``.compression``)
        for symbol in by_name.get(parts[-2].lower(), ()):
            out.append((symbol, PART))
    return out


def _tail(qualified_name: str, parts: Sequence[str]) -> bool:
    return split_qualified(qualified_name)[-len(parts) :] == list(parts)


def boost(fused: Sequence[Fused], hits: Sequence[Hit], weight: float) -> list[Fused]:
    """``fused`` with each symbol hit's chunk moved up by ``weight * score`` standard deviations of
    the fused scores (see the module docstring); re-sorted, ties by chunk id. Each boosted chunk's
    ``parts["symbols"]`` records what it added."""
    if not hits or weight <= 0:
        return list(fused)
    scores = np.array([f.score for f in fused], dtype=np.float64)
    spread = float(scores.std()) if scores.size > 1 else 0.0
    spread = spread if spread > 0 else 1.0
    floor = float(scores.min()) if scores.size else 0.0
    extra = {h.id: weight * h.score * spread for h in hits}
    out: dict[int, Fused] = {}
    for f in fused:
        if f.id in extra:
            out[f.id] = Fused(f.id, f.score + extra[f.id], {**f.parts, SYMBOLS: extra[f.id]})
        else:
            out[f.id] = f
    for chunk_id, add in extra.items():
        if chunk_id not in out:
            out[chunk_id] = Fused(chunk_id, floor + add, {SYMBOLS: add})
    order = rank_order({i: f.score for i, f in out.items()})
    return [out[i] for i, _ in order]
