"""Fusion of ranked lists: reciprocal rank fusion and weighted fusion of normalised scores.

Conventions (STYLE 9): RRF uses k = 60 and ranks counted from 1, as in Cormack, Clarke and
Büttcher (SIGIR 2009) and pyserini's ``fusion/_base.py``; a list's weight multiplies its
reciprocal-rank term. Every result list is sorted by score descending, ties broken by ascending
chunk id, so fusion does not depend on the order of its input lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from hybrid_rag.types import Hit, _enum_from_str

RRF_K = 60


class FusionMode(str, Enum):
    RRF = "rrf"
    WEIGHTED = "weighted"

    @classmethod
    def from_str(cls, value: str) -> FusionMode:
        return _enum_from_str(cls, value)


@dataclass(frozen=True)
class Fused:
    """A fused candidate: its fused score and what each input list contributed."""

    id: int
    score: float
    parts: Mapping[str, float] = field(default_factory=dict)


def rank_order(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    """(id, score) pairs by score descending, ties by ascending id."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def reciprocal_rank_fusion(
    runs: Mapping[str, Sequence[Hit]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """score(d) = sum over lists of weight / (k + rank(d)), rank counted from 1."""
    if k <= 0:
        raise ValueError("RRF k must be positive")
    totals: dict[int, float] = {}
    parts: dict[int, dict[str, float]] = {}
    for name in sorted(runs):
        weight = 1.0 if weights is None else float(weights.get(name, 0.0))
        for rank, hit in enumerate(runs[name], start=1):
            term = weight / (k + rank)
            totals[hit.id] = totals.get(hit.id, 0.0) + term
            parts.setdefault(hit.id, {})[name] = term
    return [Fused(i, s, parts[i]) for i, s in rank_order(totals)]


def minmax_normalize(scores: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; when every score is equal (or there is one) each becomes 1.0."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    low, high = float(scores.min()), float(scores.max())
    if high - low <= 1e-12:
        return np.ones_like(scores)
    return (scores - low) / (high - low)


def weighted_fusion(runs: Mapping[str, Sequence[Hit]], weights: Mapping[str, float]) -> list[Fused]:
    """score(d) = sum over lists of weight * minmax(score in that list); absent from a list adds 0."""
    totals: dict[int, float] = {}
    parts: dict[int, dict[str, float]] = {}
    for name in sorted(runs):
        hits = runs[name]
        if not hits:
            continue
        weight = float(weights.get(name, 0.0))
        normed = minmax_normalize(np.array([h.score for h in hits]))
        for hit, value in zip(hits, normed, strict=True):
            term = weight * float(value)
            totals[hit.id] = totals.get(hit.id, 0.0) + term
            parts.setdefault(hit.id, {})[name] = term
    return [Fused(i, s, parts[i]) for i, s in rank_order(totals)]


def single_list(hits: Sequence[Hit], name: str) -> list[Fused]:
    """One list passed through with its own scores (mode dense or bm25)."""
    return [Fused(h.id, h.score, {name: h.score}) for h in sorted(hits, key=lambda h: (-h.score, h.id))]
