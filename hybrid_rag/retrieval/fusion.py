"""Fusion of ranked lists: reciprocal rank fusion and weighted sums of normalised scores.

Conventions (docs/contributing.md#named-conventions): RRF uses k = 60 and ranks counted from 1,
as in Cormack, Clarke and
Büttcher (SIGIR 2009) and pyserini's ``fusion/_base.py``; a list's weight multiplies its
reciprocal-rank term. Every result list is sorted by score descending, ties broken by ascending
chunk id, so fusion does not depend on the order of its input lists.

``zscore`` (the default) is weighted CombSUM of each list's scores standardised to zero mean and
unit variance over that list (ZMUV; Montague and Aslam, CIKM 2001). Unlike RRF it keeps how far a
hit stands out in its own list, so a confident first hit of the stronger retriever is not
overturned by a near-tie in the weaker one.

**Exact scores for every candidate** (``complete_runs``, ``retrieval.exact_scores``): before a
score-based fusion (zscore, weighted), each list is extended to every candidate any list found,
at the score its own retriever gives it (the dense inner product, the BM25 score; 0 for a chunk
without a query term), so every list is standardised over the same candidates. Without it a chunk
missing from a list must be imputed; 0 after ZMUV counts it as that list's *average* hit, though
it scored below the list's last one, and pushes the lower half of the stronger list under mid
hits of the weaker (on cranfield, Recall@50 below dense alone: RESULTS.md#fusion-never-below-its-best-stage).
RRF stays as published: absent adds nothing.

**The peers' score rules** (issue 38, RESULTS.md#fusion-rules): ``relative_score`` is LlamaIndex's
relative-score fusion (``QueryFusionRetriever``, mode ``relative_score``): each list min-max
scaled to [0, 1], a weighted sum, absent adds 0; it computes what ``weighted`` computes, under the
name the peers give it. ``dbsf`` is distribution-based score fusion (Qdrant's ``dbsf``, LlamaIndex's
``dist_based_score``): each list scaled by mean ± 3 standard deviations, ``(s - (mu - 3 sd)) / 6 sd``,
then a weighted sum, absent adds 0. That scaling is ``(z + 3) / 6``, a linear map of the z-score:
over lists completed with exact scores (every candidate in every list, the engine's default)
``dbsf`` ranks exactly as ``zscore`` does; the rules differ only where a list lacks a candidate
(``retrieval.exact_scores: false``), which dbsf counts as 3 standard deviations below the mean
and zscore as the mean.

**Weights by source type** (``retrieval.dense_weight``/``bm25_weight`` and the ``code_`` pair): a
candidate's parts are weighed by its own chunk's source type. Prose questions meet code in few
literal words (identifiers, API names), so on code the lexical list is the weaker witness.
Evidence in ``benchmarks/studies/fusion_study.py`` (RESULTS.md#fusion-never-below-its-best-stage):
text 0.65/0.35 and code 0.85/0.15, with exact scores, are within noise of the best rule on both
shared datasets.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hybrid_rag.errors import ConfigError
from hybrid_rag.types import ConfigEnum, Hit

RRF_K = 60


Weights = Mapping[str, float] | Callable[[int], Mapping[str, float]]  # per list, or per chunk id
Scorer = Callable[[np.ndarray], np.ndarray]  # chunk ids -> their exact scores in one list (NaN: unknown)


class FusionMode(ConfigEnum):
    RRF = "rrf"
    WEIGHTED = "weighted"  # min-max normalised scores
    ZSCORE = "zscore"  # ZMUV-standardised scores
    RELATIVE_SCORE = "relative_score"  # LlamaIndex's name for min-max + weighted sum (= weighted)
    DBSF = "dbsf"  # distribution-based: mean ± 3 standard deviations scaled to [0, 1]


@dataclass(frozen=True)
class Fused:
    """A fused candidate: its fused score and what each input list contributed."""

    id: int
    score: float
    parts: Mapping[str, float] = field(default_factory=dict)


def rank_order(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    """(id, score) pairs by score descending, ties by ascending id."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def weight_of(weights: Weights | None, name: str, chunk_id: int) -> float:
    """List ``name``'s weight for ``chunk_id`` (None: every list weighs 1; a list not named: 0)."""
    if weights is None:
        return 1.0
    table = weights(chunk_id) if callable(weights) else weights
    return float(table.get(name, 0.0))


def rrf_term(rank: float | np.ndarray, k: int = RRF_K, weight: float = 1.0) -> float | np.ndarray:
    """A list's contribution for a hit at ``rank`` (from 1): ``weight / (k + rank)``."""
    return weight / (k + rank)


def reciprocal_rank_fusion(
    runs: Mapping[str, Sequence[Hit]],
    *,
    k: int = RRF_K,
    weights: Weights | None = None,
) -> list[Fused]:
    """score(d) = sum over lists of weight / (k + rank(d)), rank counted from 1."""
    if k <= 0:
        raise ValueError("RRF k must be positive")
    totals: dict[int, float] = {}
    parts: dict[int, dict[str, float]] = {}
    for name in sorted(runs):
        for rank, hit in enumerate(runs[name], start=1):
            term = rrf_term(rank, k, weight_of(weights, name, hit.id))
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


def dbsf_normalize(scores: np.ndarray) -> np.ndarray:
    """Scale so that mean - 3 sd maps to 0 and mean + 3 sd to 1 (population sd); a list with no
    spread becomes 1.0 (as ``zscore_normalize``). Not clipped: a score beyond 3 sd keeps its
    distance, as in LlamaIndex's and Qdrant's rule. A NaN or infinite score is a ValueError.

    >>> dbsf_normalize(np.array([3.0, 1.0])).tolist()
    [0.6666666666666666, 0.3333333333333333]
    """
    z = zscore_normalize(scores)
    if np.all(z == 1.0):  # no spread (a standardised list with spread has mean 0)
        return z
    return (z + 3.0) / 6.0


def _sum_normalized(
    runs: Mapping[str, Sequence[Hit]],
    weights: Weights,
    normalize: Callable[[np.ndarray], np.ndarray],
) -> list[Fused]:
    """score(d) = sum over lists of weight * normalize(list scores)[d]; absent from a list adds 0."""
    totals: dict[int, float] = {}
    parts: dict[int, dict[str, float]] = {}
    for name in sorted(runs):
        hits = runs[name]
        if not hits:
            continue
        normed = normalize(np.array([h.score for h in hits], dtype=np.float64))
        for hit, value in zip(hits, normed.tolist(), strict=True):
            term = weight_of(weights, name, hit.id) * value
            totals[hit.id] = totals.get(hit.id, 0.0) + term
            parts.setdefault(hit.id, {})[name] = term
    return [Fused(i, s, parts[i]) for i, s in rank_order(totals)]


def weighted_fusion(runs: Mapping[str, Sequence[Hit]], weights: Weights) -> list[Fused]:
    """score(d) = sum over lists of weight * minmax(score in that list); absent from a list adds 0."""
    return _sum_normalized(runs, weights, minmax_normalize)


def zscore_fusion(runs: Mapping[str, Sequence[Hit]], weights: Weights) -> list[Fused]:
    """score(d) = sum over lists of weight * zscore(score in that list); absent from a list adds 0.

    Fused scores are unbounded and may be negative (a hit below its list's mean); only their
    order and ratios mean anything. A list missing from ``weights`` counts with weight 0.

    >>> runs = {"dense": [Hit(1, 0.62), Hit(2, 0.60), Hit(3, 0.35)],
    ...         "bm25": [Hit(2, 9.0), Hit(4, 3.0), Hit(1, 3.0)]}
    >>> [(f.id, round(f.score, 2)) for f in zscore_fusion(runs, {"dense": 0.75, "bm25": 0.25})]
    [(2, 0.82), (1, 0.41), (4, -0.18), (3, -1.06)]
    """
    return _sum_normalized(runs, weights, zscore_normalize)


def relative_score_fusion(runs: Mapping[str, Sequence[Hit]], weights: Weights) -> list[Fused]:
    """LlamaIndex's relative-score fusion: sum over lists of weight * minmax(score); absent adds 0."""
    return _sum_normalized(runs, weights, minmax_normalize)


def dbsf_fusion(runs: Mapping[str, Sequence[Hit]], weights: Weights) -> list[Fused]:
    """Distribution-based score fusion: sum over lists of weight * (s - (mu - 3 sd)) / 6 sd;
    absent adds 0 (for a list's own hits, 3 sd below its mean).

    >>> runs = {"dense": [Hit(1, 0.62), Hit(2, 0.60), Hit(3, 0.35)],
    ...         "bm25": [Hit(2, 9.0), Hit(4, 3.0), Hit(1, 3.0)]}
    >>> [(f.id, round(f.score, 2)) for f in dbsf_fusion(runs, {"dense": 0.75, "bm25": 0.25})]
    [(2, 0.64), (1, 0.57), (3, 0.2), (4, 0.1)]
    """
    return _sum_normalized(runs, weights, dbsf_normalize)


def complete_runs(runs: Mapping[str, Sequence[Hit]], scorers: Mapping[str, Scorer]) -> dict[str, list[Hit]]:
    """Each non-empty list that has a scorer, extended to every chunk any list found, at the score
    its own retriever gives that chunk (see the module docstring); the rest unchanged.

    A chunk the scorer cannot score (NaN: not in that index) stays absent from the list.

    >>> runs = {"dense": [Hit(1, 0.9)], "bm25": [Hit(2, 7.0)]}
    >>> complete_runs(runs, {"dense": lambda ids: ids * 0.1})["dense"]
    [Hit(id=1, score=0.9), Hit(id=2, score=0.2)]
    """
    union = sorted({h.id for hits in runs.values() for h in hits})
    out: dict[str, list[Hit]] = {}
    for name, hits in runs.items():
        have = {h.id for h in hits}
        missing = np.array([i for i in union if i not in have], dtype=np.int64)
        scorer = scorers.get(name)
        if scorer is None or not hits or missing.size == 0:
            out[name] = list(hits)
            continue
        values = np.asarray(scorer(missing), dtype=np.float64).tolist()
        extra = [Hit(i, v) for i, v in zip(missing.tolist(), values, strict=True) if math.isfinite(v)]
        out[name] = sorted([*hits, *extra], key=lambda h: (-h.score, h.id))
    return out


def single_list(hits: Sequence[Hit], name: str) -> list[Fused]:
    """One list passed through with its own scores (mode dense or bm25)."""
    return [Fused(h.id, h.score, {name: h.score}) for h in sorted(hits, key=lambda h: (-h.score, h.id))]


def fuse_runs(
    runs: Mapping[str, Sequence[Hit]],
    mode: FusionMode | str,
    weights: Weights,
    *,
    k: int = RRF_K,
    scorers: Mapping[str, Scorer] | None = None,
) -> list[Fused]:
    """Fuse by ``mode`` (zscore, rrf, weighted, relative_score or dbsf); one list alone passes
    through with its own scores.

    ``weights`` gives each run's weight (a run missing from it counts 0), or a function from a
    chunk id to such a table (weights by source type); a table's weights must not all be 0 when
    there is more than one run (a ConfigError: every fused score would be 0). ``scorers``: the
    lists to complete with exact scores before a score-based fusion (``complete_runs``).
    """
    fusion = mode if isinstance(mode, FusionMode) else FusionMode.from_str(mode)
    if len(runs) == 1:
        ((name, hits),) = runs.items()
        return single_list(hits, name)
    if runs and not callable(weights) and not any(float(weights.get(name, 0.0)) > 0 for name in runs):
        raise ConfigError(f"every fusion weight is zero for runs {', '.join(sorted(runs))}")
    if scorers and fusion is not FusionMode.RRF:
        runs = complete_runs(runs, scorers)
    if fusion is FusionMode.ZSCORE:
        return zscore_fusion(runs, weights)
    if fusion is FusionMode.WEIGHTED:
        return weighted_fusion(runs, weights)
    if fusion is FusionMode.RELATIVE_SCORE:
        return relative_score_fusion(runs, weights)
    if fusion is FusionMode.DBSF:
        return dbsf_fusion(runs, weights)
    return reciprocal_rank_fusion(runs, k=k, weights=weights)


# Expansion lists are fused at half the weight of the first-pass list of their kind
# (benchmarks/RESULTS.md#query-expansion).
EXPANSION_WEIGHT = 0.5


def run_weights(
    names: Iterable[str],
    dense_weight: float,
    bm25_weight: float,
    *,
    expansion_weight: float = EXPANSION_WEIGHT,
    replace_dense: bool = False,
) -> dict[str, float]:
    """Fusion weights for the first-pass and expansion runs, by the index each one searched
    (``dense``, ``*_dense``, ``hyde``: dense; ``bm25``, ``*_bm25``: BM25).

    An expansion run gets ``expansion_weight`` times its kind's weight (``hyde`` replacing the
    dense list gets the full dense weight); the ``mq*`` runs of one kind share theirs, so n
    rewrites together weigh as much as one expansion list.

    >>> run_weights(["dense", "bm25", "prf_bm25", "mq1_dense", "mq2_dense"], 1.0, 0.8)
    {'dense': 1.0, 'bm25': 0.8, 'prf_bm25': 0.4, 'mq1_dense': 0.25, 'mq2_dense': 0.25}
    """
    kinds: dict[str, str] = {}
    for name in names:
        if name == "hyde" or name.endswith("dense"):
            kinds[name] = "dense"
        elif name.endswith("bm25"):
            kinds[name] = "bm25"
        else:
            raise ValueError(f"run {name!r} is neither a dense nor a BM25 list")
    base = {"dense": float(dense_weight), "bm25": float(bm25_weight)}
    variants = Counter(kind for name, kind in kinds.items() if name.startswith("mq"))
    weights: dict[str, float] = {}
    for name, kind in kinds.items():
        if name in ("dense", "bm25") or (name == "hyde" and replace_dense):
            weights[name] = base[kind]
        elif name.startswith("mq"):
            weights[name] = expansion_weight * base[kind] / variants[kind]
        else:
            weights[name] = expansion_weight * base[kind]
    return weights
