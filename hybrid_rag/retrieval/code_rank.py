"""Ranking that knows code: four rules over the fused list, each a stage with its flag.

They run after fusion and the path priors, before the rerank, and only when the question's
candidates hold code (a chunk of ``source_type: code``): on a corpus of prose they change nothing.
Each moves scores in standard deviations of the candidates' fused scores (the unit of
``priors.py`` and the symbol list), so a weight means the same on every fusion mode:

* ``path_roles`` (``code_roles.py``): a test, example, benchmark, fixture, vendored, generated,
  minified or re-export file, and a prose or config file, moves down by ``ln(weight)`` of its
  role's weight (``retrieval.code_role_weights``), unless the question asks for that role. A
  chunk a path prior already weighted is not weighted twice; a question that asks for tests lifts
  the test prior back.
* ``path_match``: a file whose name or folders hold the question's words (split like
  identifiers: ``parseArgs`` -> parse, args) moves up by ``retrieval.code_path_match_weight`` times
  ``1 - 0.5 ** matches`` (a word of the file name counts 1, of a folder 0.5).
* ``file_coherence``: evidence from several chunks of one file adds up, with diminishing
  returns: a file's best chunk gains ``retrieval.code_coherence_bonus`` times the sum of its
  other positive chunks' z-scores divided by their rank in the file (1/2, 1/3, ...); its k-th
  chunk steps down by ``retrieval.code_coherence_step * log2(k)``, so one long file does not
  fill the list and a small file that answers is not pushed out.
* ``definition_first``: the definitions a question names (``symbols/definitions.py``, told apart
  when a name is defined twice) are placed first: a rank guarantee, not a score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from functools import lru_cache

import numpy as np

from hybrid_rag.lang.identifiers import split_identifier
from hybrid_rag.paths import display_path
from hybrid_rag.retrieval.code_roles import (
    CONFIG,
    PROSE,
    REEXPORT,
    TEST,
    asked_roles,
    is_reexport_text,
    path_role,
)
from hybrid_rag.retrieval.definition_first import question_words
from hybrid_rag.settings import FeatureFlags as CodeFlags
from hybrid_rag.settings import RetrievalSettings
from hybrid_rag.types import ScoredChunk, SourceType

FIRST = "definition_first"  # a breakdown key: the chunk was placed first as the named definition


def holds_code(scored: Sequence[ScoredChunk], root: str | None = None) -> bool:
    """Whether the candidates hold code: a chunk of ``source_type: code`` that is not a config or
    prose file (YAML, JSON and TOML are ingested as code); the rules act only then (a no-op on
    prose corpora)."""
    return any(
        c.chunk.source_type is SourceType.CODE and path_role(shown(c, root)) not in (CONFIG, PROSE)
        for c in scored
    )


def spread_of(scored: Sequence[ScoredChunk]) -> float:
    """One standard deviation of the candidates' scores (1 when they are all equal)."""
    if len(scored) < 2:
        return 1.0
    spread = float(np.std([c.score for c in scored]))
    return spread if spread > 0 else 1.0


def _moved(
    scored: Sequence[ScoredChunk], shift: Mapping[int, float], key: str, record: Mapping[int, float]
) -> list[ScoredChunk]:
    """``scored`` with chunk ``i``'s score moved by ``shift[i]`` (position in the list), re-sorted
    (stable: ties keep the order); ``record`` what the breakdown says under ``key``."""
    if not shift:
        return list(scored)
    out = []
    for i, c in enumerate(scored):
        if i in shift:
            c = replace(c, score=c.score + shift[i], breakdown={**c.breakdown, key: record[i]})
        out.append(c)
    order = sorted(range(len(out)), key=lambda i: -out[i].score)
    return [out[i] for i in order]


def shown(c: ScoredChunk, root: str | None) -> str:
    """The chunk's path as outputs show it: relative to the ingested root (``hybrid_rag/paths.py``),
    so the folders above the repository (``/home/me/work/...``) are no words of its paths."""
    return display_path(c.path, root)


def role_of(c: ScoredChunk, root: str | None = None) -> str | None:
    path = shown(c, root)
    role = path_role(path)
    if role is None and is_reexport_text(path, c.text):
        return REEXPORT
    return role


def apply_path_roles(
    scored: Sequence[ScoredChunk],
    question: str,
    weights: Mapping[str, float],
    spread: float,
    root: str | None = None,
) -> list[ScoredChunk]:
    """The ``path_roles`` rule (module docstring): ``breakdown["role"]`` records the weight."""
    asked = asked_roles(question)
    shift: dict[int, float] = {}
    record: dict[int, float] = {}
    for i, c in enumerate(scored):
        role = role_of(c, root)
        if role is None:
            continue
        prior = c.breakdown.get("prior")
        if role in asked:
            if role == TEST and prior is not None and 0 < prior < 1:  # asked for tests: the prior undone
                shift[i], record[i] = -math.log(prior) * spread, 1.0 / prior
            continue
        weight = weights.get(role, 1.0)
        if weight == 1.0 or weight <= 0 or prior is not None:
            continue
        shift[i], record[i] = math.log(weight) * spread, weight
    return _moved(scored, shift, "role", record)


@lru_cache(maxsize=65_536)
def path_words(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """A path's words split like identifiers: (the file name's without its extension, the folders');
    remembered per path (a repository's paths recur in every question's candidates)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts:
        return frozenset(), frozenset()
    stem = parts[-1].split(".", 1)[0]
    name = frozenset(split_identifier(stem))
    folders = frozenset(w for p in parts[:-1] for w in split_identifier(p))
    return name, folders - name


def _stem_match(word: str, candidates: AbstractSet[str]) -> bool:
    if word in candidates:
        return True
    if len(word) < 4:
        return False
    return any(len(c) >= 4 and (c.startswith(word) or word.startswith(c)) for c in candidates)


def _path_matches(words: Collection[str], name: AbstractSet[str], folders: AbstractSet[str]) -> float:
    """1 for each word the file name holds, 0.5 for each other one its folders hold."""
    in_name = [_stem_match(w, name) for w in words]
    return float(sum(in_name)) + sum(
        0.5 for w, hit in zip(words, in_name, strict=True) if not hit and _stem_match(w, folders)
    )


def apply_path_match(
    scored: Sequence[ScoredChunk],
    question: str,
    weight: float,
    spread: float,
    root: str | None = None,
    words: Collection[str] | None = None,
) -> list[ScoredChunk]:
    """The ``path_match`` rule (module docstring): ``breakdown["path_match"]`` the matches.
    ``words``: the question's words already read (``question_terms.question_words``)."""
    words = question_words(question) if words is None else words
    if not words or weight <= 0:
        return list(scored)
    cache: dict[str, float] = {}
    shift: dict[int, float] = {}
    record: dict[int, float] = {}
    for i, c in enumerate(scored):
        if c.path not in cache:
            cache[c.path] = _path_matches(words, *path_words(shown(c, root)))
        matches = cache[c.path]
        if matches > 0:
            shift[i], record[i] = weight * (1 - 0.5**matches) * spread, matches
    return _moved(scored, shift, "path_match", record)


def apply_file_coherence(
    scored: Sequence[ScoredChunk], bonus: float, step: float, spread: float, paired: bool = False
) -> list[ScoredChunk]:
    """The ``file_coherence`` rule (module docstring): ``breakdown["coherence"]`` what it moved.
    ``paired`` (``features.paired_sources``): a C or C++ header and the source file of its stem in
    its folder are one unit of evidence (``source_unit``): the unit's best chunk gains its other
    chunks' support; each file's own chunks still step down within that file."""
    if len(scored) < 2:
        return list(scored)
    mean = float(np.mean([c.score for c in scored]))
    by_file: dict[str, list[int]] = {}
    by_unit: dict[str, list[int]] = {}
    for i in sorted(range(len(scored)), key=lambda i: -scored[i].score):
        by_file.setdefault(scored[i].path, []).append(i)
        by_unit.setdefault(source_unit(scored[i].path) if paired else scored[i].path, []).append(i)
    shift: dict[int, float] = {}
    for members in by_unit.values():
        if len(members) < 2:
            continue
        z = [(scored[i].score - mean) / spread for i in members]
        support = sum(max(v, 0.0) / k for k, v in enumerate(z[1:], start=2))
        shift[members[0]] = bonus * support * spread
    for members in by_file.values():
        for k, i in enumerate(members[1:], start=2):
            shift[i] = shift.get(i, 0.0) - step * math.log2(k) * spread
    shift = {i: s for i, s in shift.items() if s != 0.0}
    return _moved(scored, shift, "coherence", {i: s / spread for i, s in shift.items()})


PAIRED_EXTENSIONS = frozenset({".h", ".hh", ".hpp", ".hxx", ".h++", ".c", ".cc", ".cpp", ".cxx", ".c++"})


def source_unit(path: str) -> str:
    """The unit a C or C++ file's evidence counts in: its path without the extension (``src/clean.h``
    and ``src/clean.cc`` are one); any other file is its own."""
    stem, dot, ext = path.rpartition(".")
    return stem if dot and "/" not in ext and f".{ext.lower()}" in PAIRED_EXTENSIONS else path


def place_first(scored: Sequence[ScoredChunk], first: Sequence[int]) -> list[ScoredChunk]:
    """The chunks ``first`` (ids, in order) moved to the head of ``scored``, each scored just above
    the one after it so scores stay in rank order; ``breakdown["definition_first"]`` is 1."""
    by_id = {c.id: c for c in scored}
    head = [by_id[i] for i in first if i in by_id]
    if not head:
        return list(scored)
    rest = [c for c in scored if c.id not in set(first)]
    top = max(c.score for c in scored)
    step = max(1e-6, abs(top) * 1e-6)
    placed = [
        replace(c, score=max(c.score, top + step * (len(head) - k)), breakdown={**c.breakdown, FIRST: 1.0})
        for k, c in enumerate(head)
    ]
    return placed + rest


Timed = Callable[..., list[ScoredChunk]]  # retriever.timed bound to the query's tracer


def apply_code_rules(
    question: str,
    scored: list[ScoredChunk],
    flags: CodeFlags,
    settings: RetrievalSettings,
    first: Sequence[int],
    timed: Timed,
    root: str | None = None,
    words: Collection[str] | None = None,
) -> list[ScoredChunk]:
    """The four rules in order, each timed under its flag's name; nothing when the candidates
    hold no code. ``root``: the ingested root, paths are read relative to it; ``words``: the
    question's words, read once a question (``question_terms.question_words``)."""
    if not scored or not holds_code(scored, root):
        return scored
    spread = spread_of(scored)
    if flags.path_roles:
        weights = settings.code_role_weights
        scored = timed("path_roles", apply_path_roles, scored, question, weights, spread, root)
    if flags.path_match:
        weight = settings.code_path_match_weight
        scored = timed("path_match", apply_path_match, scored, question, weight, spread, root, words)
    if flags.file_coherence:
        bonus, step = settings.code_coherence_bonus, settings.code_coherence_step
        paired = flags.paired_sources
        scored = timed("file_coherence", apply_file_coherence, scored, bonus, step, spread, paired)
    if flags.definition_first and first:
        scored = timed("definition_first", place_first, scored, first)
    return scored
