"""The embedding cache in front of an embedder: text embedded once is never embedded again."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hybrid_rag.protocols import Embedder, WindowedEmbedder
from hybrid_rag.store.store import MetadataStore
from hybrid_rag.types import Chunk


def embed_windows(embedder: Embedder, texts: Sequence[str]) -> list[np.ndarray]:
    """Window vectors of each text (n_windows, d); one row each for an embedder without windows."""
    if isinstance(embedder, WindowedEmbedder):
        return list(embedder.embed_passage_windows(texts))
    return [row[None, :] for row in embedder.embed_passages(texts)]


def embed_missing(
    store: MetadataStore,
    embedder: Embedder,
    texts_by_sha: dict[str, str],
    *,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
    keep: bool = False,
    embed: Callable[[Embedder, Sequence[str]], list[np.ndarray]] = embed_windows,
    corrupt: list[str] | None = None,
) -> tuple[dict[str, np.ndarray], int]:
    """Window vectors for every sha: from the cache when there, else ``embed``-ed in batches.

    The one lookup of the embedding cache (keyed by model and text sha256). With ``keep`` each
    batch is cached as soon as it is embedded, so an embedder that fails half-way (a server gone)
    loses no work: the next run embeds only the rest. Returns (window matrices by sha, how many
    texts were newly embedded). A cached vector that fails its check (``cached_windows``) is
    embedded again like a missing one and, with ``keep``, replaces the damaged row; its sha256 is
    appended to ``corrupt``.
    """
    damaged: list[str] = []
    windows = store.cached_windows(embedder.model_name, texts_by_sha, corrupt=damaged) if store.exists else {}
    if damaged and keep:
        store.drop_embeddings(embedder.model_name, damaged)
    if corrupt is not None:
        corrupt.extend(damaged)
    missing = [sha for sha in texts_by_sha if sha not in windows]
    for start in range(0, len(missing), batch_size):
        batch = missing[start : start + batch_size]
        fresh = dict(zip(batch, embed(embedder, [texts_by_sha[sha] for sha in batch]), strict=True))
        if keep:
            store.put_embeddings(embedder.model_name, fresh)
        windows.update(fresh)
        if progress:
            progress(len(batch))
    return windows, len(missing)


def cached_windows_of(
    store: MetadataStore, embedder: Embedder, chunks: Sequence[Chunk], corrupt: list[str]
) -> dict[str, np.ndarray]:
    """The window vectors already cached for ``chunks`` (by sha256), embedding nothing: what a
    partial version's dense index gets. A damaged cached row counts as missing."""
    return store.cached_windows(embedder.model_name, {c.sha256 for c in chunks}, corrupt=corrupt)
