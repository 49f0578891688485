"""The definitions a question names, told apart: the chunks that ``features.definition_first``
places first (``retrieval/code_rank.py``).

The symbol list (``ranking.py``) moves every definition a query names up by a score; a score can
be outvoted (dense and BM25 agreeing on a neighbouring class) and two classes with one name both
get it. Here each code-looking word of the question (``ConnectionPool``, ``Help.formatHelp``,
``parse_args``; a lone plain word only as the exact name) picks the definition it names exactly:

* by its name as written (or equal ignoring case for a code-looking word), with the qualifier
  when the word has one (``Help.formatHelp`` is the method of ``Help``, not another
  ``formatHelp``); ``impl`` blocks and a bare qualifier's match (``PART``) never qualify;
* outside test files when the name is defined outside them too;
* a function's definition with its body before a declaration of it without one (a C/C++ header's
  prototype of ``BuildLog::LogEntry::HashCommand`` yields to ``build_log.cc``'s definition);
* a name defined more than once is told apart by the question's other words: the definition whose
  path, owner (qualified name) and doc comment share the most of them wins; a tie names none (the
  score boost still applies), so a guess is never placed first.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from hybrid_rag.lang.identifiers import split_identifier
from hybrid_rag.paths import display_path
from hybrid_rag.retrieval.symbol_ranking import CASELESS, EXACT, WORD, NamedSymbol
from hybrid_rag.symbols.question_names import _plain_stop_words
from hybrid_rag.symbols.search import FUNCTION_KINDS, declares_only, is_test_path, split_qualified

MAX_FIRST = 3  # definitions placed first at most (a question naming more is a list, not a lookup)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def question_words(query: str, skip: Sequence[str] = ()) -> set[str]:
    """The question's words as identifier parts, lowercased, without stop words and ``skip``'s
    parts (the name being told apart): ``"the flag set's parse"`` -> ``{flag, set, parse}``."""
    skipped = {p for s in skip for p in split_identifier(s)}
    stop = _plain_stop_words()
    out = set()
    for word in _WORD.findall(query):
        for part in split_identifier(word):
            if len(part) >= 3 and part not in stop and part not in skipped:
                out.add(part)
    return out


def _context_words(named: NamedSymbol, root: str | None = None) -> set[str]:
    s = named.symbol
    words = set(split_identifier(display_path(s.path, root).rsplit(".", 1)[0]))
    for part in split_qualified(s.qualified_name)[:-1]:
        words.update(split_identifier(part))
    words.update(split_identifier(s.parent or ""))
    words.update(p for w in _WORD.findall(s.doc) for p in split_identifier(w))
    return words


def definitions_first(
    named: Sequence[NamedSymbol], query: str, root: str | None = None, words: Collection[str] | None = None
) -> list[int]:
    """The chunk ids to place first, in the order the question names them (see the module
    docstring); [] when the question names no definition exactly or cannot tell them apart.
    ``root``: the ingested root, a path's words are read below it; ``words``: the question's
    :func:`question_words`, read once a question (``question_terms.py``; None: read here)."""
    by_token: dict[str, list[NamedSymbol]] = {}
    for n in named:
        if n.symbol.kind == "impl" or n.strength not in (EXACT, WORD, CASELESS):
            continue
        if n.strength == CASELESS and not n.token.code:
            continue
        by_token.setdefault(n.token.text, []).append(n)
    out: list[int] = []
    for token, group in by_token.items():
        exact = [n for n in group if n.strength in (EXACT, WORD)]
        group = exact or group
        outside = [n for n in group if not is_test_path(n.symbol.path)]
        group = outside or group
        bodies = [n for n in group if not _declared_only(n)]
        group = bodies or group
        chosen = _told_apart(group, query, token, root, words)
        if chosen is not None and chosen.symbol.chunk_id is not None and chosen.symbol.chunk_id not in out:
            out.append(chosen.symbol.chunk_id)
    return out[:MAX_FIRST]


def _declared_only(named: NamedSymbol) -> bool:
    """A function or method declared without its body (a header's prototype): its definition, where
    the index holds it, is the one placed."""
    return named.symbol.kind in FUNCTION_KINDS and declares_only(named.symbol.signature)


def _told_apart(
    group: Sequence[NamedSymbol],
    query: str,
    token: str,
    root: str | None = None,
    read: Collection[str] | None = None,
) -> NamedSymbol | None:
    chunks = {n.symbol.chunk_id for n in group}
    if len(chunks) == 1:
        return group[0]
    skip = split_qualified(token)
    if read is None:
        words = question_words(query, skip=skip)
    else:  # the same words: question_words(query) less the parts of the name told apart
        skipped = {p for s in skip for p in split_identifier(s)}
        words = {w for w in read if w not in skipped}
    if not words:
        return None
    overlap = [(len(words & _context_words(n, root)), n) for n in group]
    best = max(o for o, _ in overlap)
    winners = {n.symbol.chunk_id for o, n in overlap if o == best}
    if best == 0 or len(winners) > 1:
        return None
    return next(n for o, n in overlap if o == best)
