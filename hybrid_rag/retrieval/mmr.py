"""Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998): diversify a ranked list.

Each step picks the candidate that maximises

    lambda * rel(d) - (1 - lambda) * max_{s in selected} cos(d, s)

Conventions (docs/contributing.md#named-conventions):

* **The pool.** MMR chooses among the first ``pool`` candidates only (the pipeline's
  ``mmr.pool``; None: all of them); the rest follow in their order. Like LangChain's ``fetch_k``,
  this keeps the ``top_n`` picks among candidates that earlier stages already judged relevant,
  and keeps ``lambda``'s meaning from depending on how many candidates the retrievers returned.
* **One relevance scale.** The pool's scores must share one scale, because they are compared
  with each other. After a rerank they do not: the reranked head (``rerank.top_n_in``) carries
  the reranker's (blended) score, the tail its fused score from another scale, placed below the
  head only to keep the list sorted. Normalising across both squeezes the head into a small part
  of [0, 1], so the similarity penalty outweighs the reranker's differences (measured:
  benchmarks/RESULTS.md#rerank). So after a rerank the pipeline pools only the candidates that
  carry the reranker's score (``HybridRetriever.diversify``).
* ``rel`` is the pool's relevance min-max normalised to [0, 1] (all equal: all 1.0, as in
  ``fusion.minmax_normalize``), so ``lambda`` means the same whatever the score scale: an RRF
  score spans ~0.01, a cross-encoder logit ~20. Without a relevance, the cosine to the query is used.
* The similarity is the cosine: rows are L2-normalised here; a zero row has cosine 0 to everything.
* The first pick is always the most relevant candidate (also at ``lambda == 0``, where the formula
  alone would not look at relevance), as in most implementations (e.g. LangChain's).
* Ties break by the higher raw relevance, then by lower index (the candidate the previous stage
  ranked higher), so ``lambda == 1`` is exactly relevance order even for scores that differ by
  less than the normalisation's zero-range guard.
* ``lambda == 1`` is plain relevance order; ``lambda == 0`` picks for diversity only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import numpy as np

from hybrid_rag.retrieval.fusion import minmax_normalize
from hybrid_rag.types import ScoredChunk


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float64); an all-zero row stays zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _best(marginal: np.ndarray, rel_raw: np.ndarray) -> int:
    """Index of the highest marginal score; a tie goes to the higher raw relevance, then the lower index."""
    tied = np.flatnonzero(marginal == marginal.max())
    if tied.size == 1:
        return int(tied[0])
    return int(tied[np.argmax(rel_raw[tied])])  # argmax returns the first, i.e. lowest, index


def mmr_select(
    query_vec: np.ndarray | None,
    doc_vecs: np.ndarray,
    relevance: np.ndarray | None,
    lambda_: float,
    top_n: int,
) -> list[int]:
    """Indices into the candidates, in MMR selection order; at most ``top_n`` of them.

    ``doc_vecs`` is (n, d); ``relevance`` is n scores (any scale, higher is better) or None to use
    the cosine to ``query_vec``.

    >>> v = np.array([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0]])
    >>> mmr_select(None, v, np.array([3.0, 2.9, 1.0]), 0.5, 3)
    [0, 2, 1]
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")
    docs = np.asarray(doc_vecs, dtype=np.float64)
    if docs.ndim != 2:
        raise ValueError(f"doc_vecs must be 2-d (n, dimension), got shape {docs.shape}")
    n = docs.shape[0]
    if top_n <= 0 or n == 0:
        return []
    docs = _unit_rows(docs)
    if relevance is None:
        if query_vec is None:
            raise ValueError("mmr_select needs a relevance array or a query vector")
        query = np.asarray(query_vec, dtype=np.float64).reshape(1, -1)
        if query.shape[1] != docs.shape[1]:
            raise ValueError(f"query has dimension {query.shape[1]}, documents {docs.shape[1]}")
        rel_raw = (docs @ _unit_rows(query)[0]).astype(np.float64)
    else:
        rel_raw = np.asarray(relevance, dtype=np.float64).reshape(-1)
        if rel_raw.shape[0] != n:
            raise ValueError(f"{rel_raw.shape[0]} relevance scores for {n} candidates")
        if not np.all(np.isfinite(rel_raw)):
            raise ValueError("relevance scores must be finite")
    rel = minmax_normalize(rel_raw)

    k = min(top_n, n)
    first = _best(rel, rel_raw)
    selected = [first]
    available = np.ones(n, dtype=bool)
    available[first] = False
    max_sim = docs @ docs[first]
    while len(selected) < k:
        marginal = lambda_ * rel - (1.0 - lambda_) * max_sim
        marginal[~available] = -np.inf
        pick = _best(marginal, rel_raw)
        selected.append(pick)
        available[pick] = False
        np.maximum(max_sim, docs @ docs[pick], out=max_sim)
    return selected


def apply_mmr(
    candidates: Sequence[ScoredChunk],
    vectors: np.ndarray,
    query_vec: np.ndarray | None,
    lambda_: float,
    top_n: int,
    *,
    pool: int | None = None,
    relevance: Literal["score", "cosine"] = "score",
) -> list[ScoredChunk]:
    """Reorder candidates by MMR: the ``top_n`` picks first, then the rest in their original order.

    Only the first ``pool`` candidates (None: all) compete, and their scores must share one scale
    (see the module docstring); ``vectors[i]`` is the embedding of ``candidates[i]``, one row per
    pooled candidate (rows past the pool are ignored). Relevance is each candidate's ``score``
    (the pipeline's best estimate so far: fused or reranked), or with ``relevance="cosine"`` the
    cosine to ``query_vec``. Picks are new ScoredChunks with ``breakdown["mmr_rank"]`` (from 1);
    their ``score`` is unchanged. The rest are returned as they were.
    """
    if not candidates:
        return []
    if pool is not None and pool <= 0:
        raise ValueError(f"pool must be positive or None, got {pool}")
    size = len(candidates) if pool is None else min(pool, len(candidates))
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or vectors.shape[0] < size:
        raise ValueError(f"{size} pooled candidates but vectors of shape {vectors.shape}")
    head = candidates[:size]
    if relevance == "score":
        scores: np.ndarray | None = np.array([c.score for c in head], dtype=np.float64)
    elif relevance == "cosine":
        scores = None
    else:
        raise ValueError(f"relevance must be 'score' or 'cosine', got {relevance!r}")
    order = mmr_select(query_vec, vectors[:size], scores, lambda_, top_n)
    picked = [
        replace(head[i], breakdown={**head[i].breakdown, "mmr_rank": float(rank)})
        for rank, i in enumerate(order, start=1)
    ]
    chosen = set(order)
    return picked + [c for i, c in enumerate(candidates) if i not in chosen]
