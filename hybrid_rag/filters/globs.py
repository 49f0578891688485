"""Path globs matched in time linear in the path: no backtracking, whatever the pattern.

Semantics (``language.py`` states them for users): ``*`` is any run of characters except ``/``,
``?`` one character except ``/``, ``**`` any run including ``/`` (``a/**/b`` also matches ``a/b``),
every other character literal; a pattern without a leading ``/`` matches a tail of the path that
starts at a segment boundary, one with a leading ``/`` the whole path; a trailing ``/`` means
``/**``. A run of two or more ``*`` is ``**`` (``normalize_glob``): ``****x`` means ``**x``.

Why not a regular expression: ``re`` backtracks, so ``*a*a*a*a*x`` or sixteen ``**`` in a row take
time exponential in the number of stars on a path that almost matches (a 20-character filter held
the server for minutes). Here a glob compiles to a small automaton (one node a token) that is run
as a lazily built DFA: one dictionary step per character of the path, the set of live nodes never
larger than the pattern. ``glob_match`` is what SQLite calls (``hybrid_rag_glob``, registered on
every store connection) and what Python compares with; ``glob_to_regex`` is the same glob as a
regular expression for PostgreSQL, whose regex engine does not backtrack on these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from hybrid_rag.errors import InputError

SQL_FUNCTION = "hybrid_rag_glob"  # the SQLite function: hybrid_rag_glob(pattern, value) -> 1 / 0 / NULL
_STARS = re.compile(r"\*{2,}")
_DFA_MAX_STATES = 4096  # a glob's memo of state sets; past it, the memo starts again (still linear)

# Node kinds of the automaton: each consumes one character, except SPLIT (two empty moves).
LIT, ONE, STAR, ANY, SPLIT, DIRS = "lit", "one", "star", "any", "split", "dirs"


def normalize_glob(pattern: str) -> str:
    """The glob as it is matched: a run of ``*`` longer than two is ``**``, a trailing ``/`` is
    ``/**``; InputError when empty. Every backend (SQL, Python, Milvus) matches this form.

    >>> normalize_glob("src/****x"), normalize_glob("docs/")
    ('src/**x', 'docs/**')
    """
    if not pattern:
        raise InputError("empty glob pattern")
    pattern = _STARS.sub("**", pattern)
    return pattern + "**" if pattern.endswith("/") else pattern


def tokens(pattern: str) -> list[tuple[str, str]]:
    """The normalised glob as (kind, character) tokens: ``/**/`` is ``/`` then DIRS (any run of
    whole segments, ``(?:.*/)?``), a leading ``**/`` DIRS, ``**`` ANY, ``*`` STAR, ``?`` ONE."""
    pattern = normalize_glob(pattern)
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("/**/", i):
            out += [(LIT, "/"), (DIRS, "")]
            i += 4
        elif i == 0 and pattern.startswith("**/"):
            out.append((DIRS, ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append((ANY, ""))
            i += 2
        elif pattern[i] == "*":
            out.append((STAR, ""))
            i += 1
        elif pattern[i] == "?":
            out.append((ONE, ""))
            i += 1
        else:
            out.append((LIT, pattern[i]))
            i += 1
    return out


def glob_to_regex(pattern: str) -> str:
    """The regular expression (for ``re.search``, or PostgreSQL's ``~``) that a path glob means.

    >>> glob_to_regex("src/**")
    '(?:^|/)src/.*\\\\Z'
    """
    pattern = normalize_glob(pattern)
    parts = {DIRS: "(?:.*/)?", ANY: ".*", STAR: "[^/]*", ONE: "[^/]"}
    body = "".join(parts.get(kind, "") or re.escape(char) for kind, char in tokens(pattern))
    return ("^" if pattern.startswith("/") else "(?:^|/)") + body + r"\Z"


@dataclass
class Glob:
    """One compiled glob. Nodes: LIT/ONE consume a character and move on; STAR/ANY loop on their
    characters or move on without one; DIRS is a SPLIT (skip, or enter) then a loop over any
    character that may leave after a ``/``. Node ``len(nodes)`` accepts.

    Matching runs a DFA built lazily from the node sets (each set reached gets a small integer; a
    step is one dictionary lookup). Before it, two necessary conditions are tested with ``str``
    methods: every literal run of the pattern occurs in the path, and a pattern that ends with a
    literal run ends the path with it; most paths a filter rejects stop there."""

    pattern: str
    anchored: bool
    nodes: list[tuple[str, str]]
    literals: tuple[str, ...] = ()
    suffix: str = ""
    _closure: list[frozenset[int]] = field(default_factory=list)
    _ids: dict[frozenset[int], int] = field(default_factory=dict)
    _sets: list[frozenset[int]] = field(default_factory=list)
    _next: list[dict[str, int]] = field(default_factory=list)
    _accepts: list[bool] = field(default_factory=list)

    @classmethod
    def compile(cls, pattern: str) -> Glob:
        nodes: list[tuple[str, str]] = []
        runs, run = [], ""
        for kind, char in tokens(pattern):
            nodes += [(SPLIT, ""), (DIRS, "")] if kind == DIRS else [(kind, char)]
            if kind == LIT:
                run += char
            else:
                runs.append(run)
                run = ""
        suffix = run
        runs.append(run)
        literals = tuple(sorted({r for r in runs if r}, key=len, reverse=True))
        glob = cls(normalize_glob(pattern), pattern.startswith("/"), nodes, literals, suffix)
        glob._closure = [glob._close(i) for i in range(len(nodes) + 1)]
        glob._state(glob._closure[0])
        return glob

    def _close(self, start: int) -> frozenset[int]:
        """``start`` and every node reachable from it without a character."""
        seen, todo = set(), [start]
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            kind = self.nodes[i][0] if i < len(self.nodes) else None
            if kind in (STAR, ANY):
                todo.append(i + 1)
            elif kind == SPLIT:
                todo += [i + 1, i + 2]
        return frozenset(seen)

    def _state(self, nodes: frozenset[int]) -> int:
        found = self._ids.get(nodes)
        if found is None:
            if len(self._sets) >= _DFA_MAX_STATES:  # a pathological pattern: start the memo again
                self._ids.clear()
                self._sets.clear()
                self._next.clear()
                self._accepts.clear()
            found = self._ids[nodes] = len(self._sets)
            self._sets.append(nodes)
            self._next.append({})
            self._accepts.append(len(self.nodes) in nodes)
        return found

    def _step(self, state: int, char: str) -> int:
        out: set[int] = set()
        for i in self._sets[state]:
            if i >= len(self.nodes):
                continue
            kind, want = self.nodes[i]
            if (kind == LIT and char == want) or (kind == ONE and char != "/"):
                out |= self._closure[i + 1]
            elif (kind == STAR and char != "/") or kind == ANY:
                out |= self._closure[i]
            elif kind == DIRS:
                out |= self._closure[i]
                if char == "/":
                    out |= self._closure[i + 1]
        if char == "/" and not self.anchored:
            out |= self._closure[0]  # a pattern without a leading "/" may start after any "/"
        table = self._next[state]
        target = self._state(frozenset(out))
        if len(self._next) > state and self._next[state] is table:  # (the memo was not restarted)
            table[char] = target
        return target

    def match(self, path: str) -> bool:
        """Whether ``path`` matches: the literal checks, then one DFA step a character."""
        if self.suffix and not path.endswith(self.suffix):
            return False
        if not all(literal in path for literal in self.literals):
            return False
        start = self._ids.get(self._closure[0])
        state = start if start is not None else self._state(self._closure[0])
        for char in path:
            following = self._next[state].get(char)
            state = following if following is not None else self._step(state, char)
        return self._accepts[state]


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    return Glob.compile(pattern)


@lru_cache(maxsize=65_536)
def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` matches the glob, exactly as the SQL filter decides (a path repeats once a
    chunk in a filter's scan: the answer is remembered)."""
    return compile_glob(pattern).match(path)


def sql_glob(pattern: str | None, value: object) -> int | None:
    """``hybrid_rag_glob(pattern, value)`` for SQLite: 1 or 0, NULL when either is NULL or the value
    is not text (a ``meta`` key holding a number)."""
    if pattern is None or not isinstance(value, str):
        return None
    return int(glob_match(pattern, value))
