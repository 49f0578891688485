"""What makes the query pipeline something a user opens and closes: ``HybridRetriever.open`` over a
data dir, ``close()`` and ``with``. The composition root (``engine.py``) builds what ``open``
returns and registers how (``set_opener``), so this layer never imports the one above it."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from hybrid_rag.errors import ConfigError
from hybrid_rag.store import MetadataStore
from hybrid_rag.types import QueryResult

T = TypeVar("T", bound="Openable")
_OPENER: list[Callable[..., Any]] = []


def set_opener(opener: Callable[..., Any]) -> None:
    """How ``HybridRetriever.open`` builds a retriever (``engine.open_retriever``)."""
    _OPENER[:] = [opener]


class Openable:
    """``open`` a ready retriever over a data dir; ``close`` (or leave a ``with`` block) to close
    the store it reads, the only thing its Engine holds open."""

    store: MetadataStore
    # set by ``open``: a result as the opened retriever shows it (paths, stale citations)
    present: Callable[[QueryResult, bool], QueryResult] | None = None

    @classmethod
    def open(
        cls: type[T],
        data_dir: str | os.PathLike[str] | None = None,
        *,
        config: str | os.PathLike[str] | None = None,
    ) -> T:
        """A ready retriever over an existing data dir, with the CLI's defaults (``data_dir``:
        ``HYBRID_RAG_HOME`` or ``./data``; ``config``: ``HYBRID_RAG_CONFIG`` or the defaults).
        Close it (``close()``, or a ``with`` block): it holds the store it opened."""
        if not _OPENER:  # only ``hybrid_rag.retrieval`` imported, not the engine
            raise ConfigError(
                "HybridRetriever.open needs the engine: `from hybrid_rag import HybridRetriever` "
                "(or import hybrid_rag.engine) before opening one"
            )
        opened = _OPENER[0](data_dir, config=config)
        assert isinstance(opened, cls)
        return opened

    def close(self) -> None:
        """Close the store this retriever reads."""
        self.store.close()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
