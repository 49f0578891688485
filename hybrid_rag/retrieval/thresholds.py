"""Per-source-type score floors (``retrieval.min_score_code`` / ``min_score_text``).

``retrieval.threshold_on`` says which score a floor reads: ``final`` (the ranked score, on the
fusion's or the reranker's scale) or ``dense`` (the chunk's cosine to the query, its best window
under MaxP), so that floors written for a cosine (e.g. 0.65 for code, 0.35 for text) keep their
meaning whatever the fusion. Under ``dense`` a result with no cosine (a BM25-only query) is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from hybrid_rag.types import ScoredChunk, SourceType


def apply_min_scores(
    results: Sequence[ScoredChunk],
    min_score_code: float | None,
    min_score_text: float | None,
    *,
    on: str = "final",
) -> list[ScoredChunk]:
    """Drop results whose score (``on``: ``final`` or ``dense``) is below their source type's
    floor (None: no floor); order kept."""
    floors = {SourceType.CODE: min_score_code, SourceType.TEXT: min_score_text}

    def kept(r: ScoredChunk) -> bool:
        floor = floors.get(r.source_type)
        score = r.score if on == "final" else r.breakdown.get("dense")
        return floor is None or score is None or score >= floor

    return [r for r in results if kept(r)]
