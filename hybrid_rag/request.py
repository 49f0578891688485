"""The one request model: a question and how to answer it, typed and frozen.

Every surface builds a :class:`Query` (the CLI from its flags, the HTTP API and MCP from their
checked bodies, the framework retrievers from their arguments) and the engine carries it through
``retrieve``, ``context`` and ``ask`` instead of loose keyword arguments; the pipeline takes one
too (``HybridRetriever.query``). The keyword forms (``engine.query(text, top_k=3)``) still work:
they are folded into a Query by :meth:`Query.of`, which names an unknown option instead of
passing it on.

>>> q = Query.of("how are ties broken?", top_k=3, mode="bm25")
>>> q.top_k, q.pipeline_args["mode"]
(3, 'bm25')
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from hybrid_rag.errors import InputError
from hybrid_rag.lang.detect import Language
from hybrid_rag.lang.query import Asked


@dataclass(frozen=True)
class Query:
    """A question (``text``) with its options: ``top_k`` and ``mode`` (None: the settings'),
    ``filters`` (a filter string, a list of them ANDed, or a mapping), ``features`` (per-call
    stage overrides, ``{"rerank": False}``), ``lang`` (the question's language instead of the
    detected one), ``absolute_paths`` (stored paths, not relative to the ingested root) and
    ``fusion`` (another rule than ``retrieval.fusion`` for this call: ``retrieval/fusion.py``)."""

    text: str
    top_k: int | None = None
    mode: str | None = None
    filters: object = None
    features: Mapping[str, bool] | None = None
    lang: str | None = None
    absolute_paths: bool = False
    fusion: str | None = None

    OPTIONS: ClassVar[tuple[str, ...]] = (
        "top_k", "mode", "filters", "features", "lang", "absolute_paths", "fusion",
    )  # fmt: skip

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InputError(f"a query is text, not {type(self.text).__name__}")
        if self.features is not None:  # a copy no caller can change under a frozen query
            object.__setattr__(self, "features", MappingProxyType(dict(self.features)))

    @classmethod
    def of(cls, query: str | Query, **options: Any) -> Query:
        """``query`` as a Query: a Query as it is (``options`` replacing its fields), text with
        ``options``; InputError naming an option that is none of :attr:`OPTIONS`."""
        unknown = sorted(set(options) - set(cls.OPTIONS))
        if unknown:
            raise InputError(
                f"unknown query option {', '.join(unknown)}; the options are {', '.join(cls.OPTIONS)}"
            )
        if isinstance(query, Query):
            return dataclasses.replace(query, **options) if options else query
        return cls(query, **options)

    @property
    def pipeline_args(self) -> dict[str, Any]:
        """What the pipeline ranks by: ``top_k``, ``filters``, ``mode``, ``features`` (and ``fusion``
        when the call names a rule)."""
        features = dict(self.features) if self.features is not None else None
        args = {"top_k": self.top_k, "filters": self.filters, "mode": self.mode, "features": features}
        return {**args, "fusion": self.fusion} if self.fusion is not None else args

    @functools.cached_property
    def asked(self) -> Asked:
        """The question's language, decided once (``lang`` when given, else detected) and handed
        to every stage that reads the question (``lang/query.py``); InputError for a ``lang`` that
        is not a language code."""
        return Asked.of(self.text, self.lang)

    @property
    def language(self) -> Language:
        """The language the question is read in (:attr:`asked`'s)."""
        return self.asked.language
