"""Results at the level of files: ``group="file"`` and ``retrieval.group_units_by_file``.

``group="file"`` ranks files by their units' evidence and gives each its best units (ids, line ranges,
scores): what a "where is X handled" question wants. The retrieval under it asks for
``POOL_PER_FILE`` chunks per file wanted, so a file's second and third units can count, then keeps
the best ``top_k`` files. A file's score is ``file_score``: its best unit's score plus a decayed sum
of its other units' (positive) scores, a small function meant to be replaced by a file-coherence
rule (issue 37) without touching the surfaces. The surfaces (CLI, HTTP, MCP, the framework
retrievers) only pass ``group`` and render ``QueryResult.files``.

``retrieval.group_units_by_file`` (default off) keeps the chunk list a chunk list but moves a file's
units together, at the place of its best unit (``units_together``): which chunks are returned
does not change, only their order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from hybrid_rag.errors import InputError
from hybrid_rag.types import FileGroup, QueryResult, ScoredChunk

GROUPS = ("chunk", "file")
UNITS_PER_FILE = 3  # best units shown under a file
POOL_PER_FILE = 5  # chunks retrieved per file asked for
REST_DECAY = 0.5  # a file's k-th other unit counts REST_DECAY**k of its score

FileScore = Callable[[Sequence[float]], float]


def check_group(group: str | None) -> str:
    """``group`` checked: "chunk" (None too) or "file"; anything else is an InputError naming both."""
    if group is None:
        return "chunk"
    if group not in GROUPS:
        raise InputError(f"group: {group!r} is not one of {', '.join(GROUPS)}")
    return group


def check_units(units_per_file: int | None) -> int:
    """How many units a file shows (``UNITS_PER_FILE`` for None); under 1 is an InputError."""
    if units_per_file is None:
        return UNITS_PER_FILE
    if isinstance(units_per_file, bool) or not isinstance(units_per_file, int) or units_per_file < 1:
        raise InputError(f"units_per_file: {units_per_file!r} must be a whole number of at least 1")
    return units_per_file


def file_score(scores: Sequence[float], decay: float = REST_DECAY) -> float:
    """A file's evidence from its units' scores: the best one plus ``decay**k`` times the k-th of the
    others (their positive part), so a second good unit adds and a long file's tenth adds little."""
    ordered = sorted(scores, reverse=True)
    return ordered[0] + sum(decay**k * max(s, 0.0) for k, s in enumerate(ordered[1:], 1))


def files_of(
    chunks: Sequence[ScoredChunk], *, units_per_file: int = UNITS_PER_FILE, score: FileScore = file_score
) -> list[FileGroup]:
    """``chunks`` grouped by their document, the files ranked by ``score`` of all their units (ties: the
    file met first), each with its ``units_per_file`` best units, best first."""
    by_document: dict[int, list[ScoredChunk]] = {}
    for c in chunks:
        by_document.setdefault(c.chunk.document_id, []).append(c)
    files = []
    for document_id, units in by_document.items():
        best = sorted(units, key=lambda u: -u.score)
        files.append(
            FileGroup(best[0].path, document_id, score([u.score for u in best]), tuple(best[:units_per_file]))
        )
    return sorted(files, key=lambda f: -f.score)


def grouped(
    result: QueryResult, top_k: int, units_per_file: int = UNITS_PER_FILE, score: FileScore = file_score
) -> QueryResult:
    """``result`` at the level of files: its best ``top_k`` files by ``score`` in ``files``, and as its
    chunks those files' units, file by file (their parents and matching lines kept)."""
    files = tuple(files_of(result.chunks, units_per_file=units_per_file, score=score)[:top_k])
    chunks = tuple(u for f in files for u in f.units)
    kept = {c.id for c in chunks}
    return replace(
        result,
        chunks=chunks,
        files=files,
        parents={i: p for i, p in result.parents.items() if i in kept},
        matches={i: m for i, m in result.matches.items() if i in kept},
    )


def by_file(
    retrieve: Callable[..., tuple[QueryResult, Any]],
    kwargs: dict[str, Any],
    default_top_k: int,
    units_per_file: int | None = None,
    score: FileScore = file_score,
) -> tuple[QueryResult, Any]:
    """Run ``retrieve(**kwargs)`` for ``POOL_PER_FILE`` chunks per file wanted (``kwargs["top_k"]``,
    else ``default_top_k``) and group its result by ``score``; the second item (the self-check's
    record) passes."""
    units = check_units(units_per_file)
    top_k = kwargs.get("top_k")
    top_k = default_top_k if top_k is None else top_k
    result, extra = retrieve(**{**kwargs, "top_k": top_k * max(POOL_PER_FILE, units)})
    return grouped(result, top_k, units, score), extra


def units_together(chunks: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """``chunks`` with each file's units moved up beside its first (best-placed) one, in their order:
    the same chunks, a file's units together (``retrieval.group_units_by_file``)."""
    by_document: dict[int, list[ScoredChunk]] = {}
    for c in chunks:
        by_document.setdefault(c.chunk.document_id, []).append(c)
    return [c for units in by_document.values() for c in units]
