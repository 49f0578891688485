"""Fusion of ranked lists: reciprocal rank fusion and weighted sums of normalised scores.

Conventions (STYLE 9): RRF uses k = 60 and ranks counted from 1, as in Cormack, Clarke and
Büttcher (SIGIR 2009) and pyserini's ``fusion/_base.py``; a list's weight multiplies its
reciprocal-rank term. Every result list is sorted by score descending, ties broken by ascending
chunk id, so fusion does not depend on the order of its input lists.

``zscore`` (the default, with dense 0.75 / BM25 0.25) is weighted CombSUM of each list's scores
standardised to zero mean and unit variance over that list (ZMUV; Montague and Aslam, CIKM 2001);
a chunk absent from a list adds 0 for it, i.e. counts as that list's average hit. Unlike RRF it
keeps how far a hit stands out in its own list, so a confident first hit of the stronger retriever
is not overturned by a near-tie in the weaker one. Evidence in ``benchmarks/fusion_study.py``:
equal-weight RRF loses 0.109 nDCG@10 to dense alone on CoSQA; this rule gains 0.003 there and
0.017 over BM25 on Cranfield (neither difference significant). Of all rules tried it has the best
worst case over nDCG@10, MRR@10 and P@3 on both; dense weights 0.75-0.85 lose nDCG@10 on
neither, and no weight of RRF, min-max or DBSF manages that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from hybrid_rag.errors import ConfigError
from hybrid_rag.types import Hit, _enum_from_str

RRF_K = 60


class FusionMode(str, Enum):
    RRF = "rrf"
    WEIGHTED = "weighted"  # min-max normalised scores
    ZSCORE = "zscore"  # ZMUV-standardised scores

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


def zscore_normalize(scores: np.ndarray) -> np.ndarray:
    """Standardise to mean 0 and (population) standard deviation 1 over the list.

    A list with no spread (one score, or all equal) has no scale to measure against: its hits
    rank equal and above an absent chunk's 0, so each becomes 1.0, the value the better of two
    distinct scores gets. A NaN or infinite score is a ValueError.

    >>> zscore_normalize(np.array([3.0, 1.0])).tolist()
    [1.0, -1.0]
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    if not np.isfinite(scores).all():
        raise ValueError("cannot standardise NaN or infinite scores")
    spread = float(scores.std())
    if spread <= 1e-12 * max(1.0, float(np.abs(scores).max())):
        return np.ones_like(scores)
    return (scores - float(scores.mean())) / spread


def _sum_normalized(
    runs: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    normalize: Callable[[np.ndarray], np.ndarray],
) -> list[Fused]:
    """score(d) = sum over lists of weight * normalize(list scores)[d]; absent from a list adds 0."""
    totals: dict[int, float] = {}
    parts: dict[int, dict[str, float]] = {}
    for name in sorted(runs):
        hits = runs[name]
        if not hits:
            continue
        weight = float(weights.get(name, 0.0))
        normed = normalize(np.array([h.score for h in hits], dtype=np.float64))
        for hit, value in zip(hits, normed, strict=True):
            term = weight * float(value)
            totals[hit.id] = totals.get(hit.id, 0.0) + term
            parts.setdefault(hit.id, {})[name] = term
    return [Fused(i, s, parts[i]) for i, s in rank_order(totals)]


def weighted_fusion(runs: Mapping[str, Sequence[Hit]], weights: Mapping[str, float]) -> list[Fused]:
    """score(d) = sum over lists of weight * minmax(score in that list); absent from a list adds 0."""
    return _sum_normalized(runs, weights, minmax_normalize)


def zscore_fusion(runs: Mapping[str, Sequence[Hit]], weights: Mapping[str, float]) -> list[Fused]:
    """score(d) = sum over lists of weight * zscore(score in that list); absent from a list adds 0.

    Fused scores are unbounded and may be negative (a hit below its list's mean); only their
    order and ratios mean anything. A list missing from ``weights`` counts with weight 0.

    >>> runs = {"dense": [Hit(1, 0.62), Hit(2, 0.60), Hit(3, 0.35)],
    ...         "bm25": [Hit(2, 9.0), Hit(4, 3.0), Hit(1, 3.0)]}
    >>> [(f.id, round(f.score, 2)) for f in zscore_fusion(runs, {"dense": 0.75, "bm25": 0.25})]
    [(2, 0.82), (1, 0.41), (4, -0.18), (3, -1.06)]
    """
    return _sum_normalized(runs, weights, zscore_normalize)


def single_list(hits: Sequence[Hit], name: str) -> list[Fused]:
    """One list passed through with its own scores (mode dense or bm25)."""
    return [Fused(h.id, h.score, {name: h.score}) for h in sorted(hits, key=lambda h: (-h.score, h.id))]


def fuse_runs(
    runs: Mapping[str, Sequence[Hit]],
    mode: FusionMode | str,
    weights: Mapping[str, float],
    *,
    k: int = RRF_K,
) -> list[Fused]:
    """Fuse by ``mode`` (zscore, rrf or weighted); one list alone passes through with its own scores.

    ``weights`` gives each run's weight (a run missing from it counts 0); at least one must be
    positive when there is more than one run (a ConfigError: every fused score would be 0).
    """
    fusion = mode if isinstance(mode, FusionMode) else FusionMode.from_str(mode)
    if len(runs) == 1:
        ((name, hits),) = runs.items()
        return single_list(hits, name)
    if runs and not any(float(weights.get(name, 0.0)) > 0 for name in runs):
        raise ConfigError(f"every fusion weight is zero for runs {', '.join(sorted(runs))}")
    if fusion is FusionMode.ZSCORE:
        return zscore_fusion(runs, weights)
    if fusion is FusionMode.WEIGHTED:
        return weighted_fusion(runs, weights)
    return reciprocal_rank_fusion(runs, k=k, weights=weights)
