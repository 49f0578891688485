"""Per-source-type score floors (``retrieval.min_score_code`` / ``min_score_text``)."""

from __future__ import annotations

from collections.abc import Sequence

from hybrid_rag.types import ScoredChunk, SourceType


def apply_min_scores(
    results: Sequence[ScoredChunk], min_score_code: float | None, min_score_text: float | None
) -> list[ScoredChunk]:
    """Drop results whose ``score`` is below their source type's floor (None: no floor); order kept."""
    floors = {SourceType.CODE: min_score_code, SourceType.TEXT: min_score_text}
    return [r for r in results if floors.get(r.source_type) is None or r.score >= floors[r.source_type]]
