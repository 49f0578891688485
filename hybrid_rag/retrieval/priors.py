"""Path priors (``retrieval.path_priors``): a weight per path glob, applied to the fused ranking.

A repository mixes implementation, tests, docs and examples; a question about what the code does
is usually best answered by the implementation, while a test file repeats its words. A prior is
``{pattern: "tests/**", weight: 0.8}``: a result whose path matches the glob (the filter
language's globs, ``filters/globs.py``: a pattern without a leading ``/`` matches from any
folder down) has its score moved by ``ln(weight)`` standard deviations of the query's candidate
scores, so the shift means the same on every fusion's scale (z-score, RRF, min-max) and a
weight of 1 changes nothing; above 1 promotes. The first pattern a path matches decides.

The stage runs after fusion and before the rerank (so a reranker's head sees the demoted order),
under ``features.priors``; no priors configured: nothing to do, and no stage in the trace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from hybrid_rag.filters import glob_match
from hybrid_rag.settings import PathPrior
from hybrid_rag.types import ScoredChunk


def prior_weight(priors: Sequence[PathPrior], path: str) -> float:
    """The weight of the first prior whose glob matches ``path`` (1.0 when none does)."""
    return _weight(_key(priors), path)


def _key(priors: Sequence[PathPrior]) -> tuple[tuple[str, float], ...]:
    return tuple((p.pattern, p.weight) for p in priors)


@lru_cache(maxsize=1 << 16)
def _weight(priors: tuple[tuple[str, float], ...], path: str) -> float:
    """Cached: a store's paths come back query after query (a glob match costs ~10 us)."""
    normalised = path.replace("\\", "/")
    for pattern, weight in priors:
        if glob_match(pattern, normalised):
            return weight
    return 1.0


def apply_priors(results: Sequence[ScoredChunk], priors: Sequence[PathPrior]) -> list[ScoredChunk]:
    """``results`` re-ranked with each one's path prior (stable: ties keep the fused order); a
    weighted result records its weight as ``breakdown["prior"]``."""
    if not priors or not results:
        return list(results)
    key = _key(priors)
    weights = [_weight(key, r.path) for r in results]
    if all(w == 1.0 for w in weights):
        return list(results)
    scores = np.array([r.score for r in results], dtype=np.float64)
    spread = float(scores.std()) if len(results) > 1 else 0.0
    spread = spread if spread > 0 else 1.0  # one result or equal scores: a unit step
    out = []
    for r, w in zip(results, weights, strict=True):
        if w == 1.0:
            out.append(r)
        else:
            breakdown = {**r.breakdown, "prior": w}
            out.append(ScoredChunk(r.chunk, r.score + math.log(w) * spread, breakdown))
    order = sorted(range(len(out)), key=lambda i: -out[i].score)
    return [out[i] for i in order]
