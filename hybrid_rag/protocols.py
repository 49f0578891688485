"""The typed seams between stages (docs/contributing.md#typed-seams). A backend swaps without
touching the pipeline."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

import numpy as np

from hybrid_rag.filters import FilterExpr
from hybrid_rag.types import Hit, ScoredChunk

if TYPE_CHECKING:
    from hybrid_rag.lang.query import Asked
    from hybrid_rag.lang.tokenize import Tokenizer


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
    marked = cast(FilteredIds, ids.view(FilteredIds))
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


# -- the optional capabilities of an embedder: a stage that can use one asks ``isinstance(e, X)``.
# Each declares only its own methods (no properties): on Python 3.11 ``isinstance`` against a
# protocol reads every member, and an embedder's ``dimension`` may ask a server.


@runtime_checkable
class WindowedEmbedder(Protocol):
    """An embedder that embeds a long text as several windows (MaxP, ``index.dense_scoring``)."""

    def embed_passage_windows(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One (n_windows, dimension) array of window vectors a text."""
        ...


@runtime_checkable
class DimensionLearner(Protocol):
    """An embedder (a remote server's) told its dimension by the index built with it, so a query
    can fall back to BM25 without asking a server that is down."""

    def expect_dimension(self, dimension: int) -> None: ...


@runtime_checkable
class ModelChooser(Protocol):
    """``embedding.model: auto``: a model chosen by the data dir's languages (``models/auto.py``),
    bound to the data dir, prepared by an ingest's files; it also says ``provisional``, ``choice``
    and ``kept_from_index`` (attributes, read with ``getattr``: a property here would be evaluated
    by every ``isinstance``)."""

    def bind_data_dir(self, indices_dir: Path, language_counts: Callable[[], Mapping[str, int]]) -> None: ...

    def prepare(
        self, files: Sequence[str | Path], head: Callable[[str], str | None] | None = None
    ) -> None: ...

    def prepare_texts(self, texts: Sequence[str]) -> None: ...


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

    def search(
        self,
        query: str,
        k: int,
        allowed_ids: np.ndarray | None = None,
        *,
        lang: str | None = None,
        terms: Sequence[str] | None = None,
    ) -> list[Hit]:
        """The top ``k`` for ``query`` read in ``lang`` (the question's language, decided once:
        ``lang/query.py``; None: detected). ``terms``: the query's terms as the index's own
        tokenizer reads them (an :class:`OwnTokenizer`'s, analysed once a question:
        ``Tokenizer.asked_terms``); None: the index reads ``query`` itself."""
        ...

    def score(
        self, query: str, ids: np.ndarray, *, lang: str | None = None, terms: Sequence[str] | None = None
    ) -> np.ndarray:
        """The score ``search`` would give each of ``ids`` (in that order, 0 without a query term);
        NaN for an absent id. ``terms``: as in ``search``."""
        ...

    def save(self, directory: Path) -> None: ...


# -- the optional capabilities of a keyword index


@runtime_checkable
class ReadsLanguage(Protocol):
    """A reranker that reads the question in a language: it is handed the one decided for the
    question (``Asked``, ``lang/query.py``) and its terms analysed once, never detecting it."""

    def score_asked(self, asked: Asked, candidates: Sequence[ScoredChunk]) -> np.ndarray: ...


@runtime_checkable
class OwnTokenizer(Protocol):
    """A keyword index whose queries must go through its own tokenizer to meet the indexed terms."""

    @property
    def tokenizer(self) -> Tokenizer: ...


@runtime_checkable
class KnowsTerms(Protocol):
    """A keyword index that can say which of a question's terms it holds."""

    def known_terms(self, terms: Sequence[str]) -> list[str]: ...


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
