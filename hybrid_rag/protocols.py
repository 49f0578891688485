"""The typed seams between stages (docs/contributing.md#typed-seams). A backend swaps without
touching the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from hybrid_rag.filters import FilterExpr
from hybrid_rag.types import Hit, ScoredChunk


class FilteredIds(np.ndarray):
    """Allowed chunk ids (the ``allowed_ids`` of a search) that remember the filter that selected them.

    Every index takes them as plain ids; one that can evaluate the filter itself (Milvus) may send
    ``filter_expr`` instead of a long id list. Only ``with_filter`` sets the filter: any array derived
    from one (a slice, an intersection) has none, since it may hold other ids.
    """

    filter_expr: FilterExpr | None = None

    def __array_finalize__(self, obj: object) -> None:
        self.filter_expr = None


def with_filter(ids: np.ndarray, expr: FilterExpr | None) -> np.ndarray:
    """``ids`` (int64) marked as the chunks ``expr`` matches (``FilteredIds``); plain when no ``expr``."""
    ids = np.asarray(ids, dtype=np.int64)
    if expr is None:
        return ids
    marked = ids.view(FilteredIds)
    marked.filter_expr = expr
    return marked


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 rows of shape (n, dimension)."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class VectorIndex(Protocol):
    """Inner-product search over vectors keyed by chunk id."""

    @property
    def dimension(self) -> int: ...

    def __len__(self) -> int: ...

    def ids(self) -> np.ndarray: ...

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """Whether each of ``ids`` is held (a bool array in the order given)."""
        ...

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None: ...

    def remove(self, ids: np.ndarray) -> int: ...

    def search(self, query: np.ndarray, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]:
        """Top-k by inner product; with ``allowed_ids`` only those ids, and still k of them if they exist
        (``allowed_ids`` may be ``FilteredIds``: a backend may evaluate their filter itself)."""
        ...

    def score(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The score ``search`` would give each of ``ids`` (in that order); NaN for an absent id."""
        ...

    def save(self, directory: Path) -> None: ...


@runtime_checkable
class KeywordIndex(Protocol):
    """Lexical (BM25) search over chunk texts keyed by chunk id."""

    def __len__(self) -> int: ...

    def ids(self) -> np.ndarray: ...

    def build(self, ids: np.ndarray, texts: Sequence[str]) -> None: ...

    def search(self, query: str, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]: ...

    def score(self, query: str, ids: np.ndarray) -> np.ndarray:
        """The score ``search`` would give each of ``ids`` (in that order, 0 without a query term);
        NaN for an absent id."""
        ...

    def save(self, directory: Path) -> None: ...


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, candidate) pairs; higher is more relevant. Returns one score a candidate."""

    @property
    def name(self) -> str: ...

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray: ...


@runtime_checkable
class Generator(Protocol):
    """A text generator (an LLM behind an OpenAI-compatible API, or a test double)."""

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str: ...
