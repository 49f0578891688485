"""Building a version's second vector set (``second_dense.py``): from the embedding cache, the
missing vectors embedded, the live version's set carried over."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError, IndexMismatchError
from hybrid_rag.indices.live import dense_kind, load_dense, new_dense
from hybrid_rag.indices.multivector import add_chunk_vectors
from hybrid_rag.indices.second_dense import BATCH, OFF, Dense, SecondBuild, second_entry
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import IndexSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.embedding_cache import cached_windows_of, embed_missing
from hybrid_rag.types import Chunk


def build_second(
    store: MetadataStore,
    embedder: Embedder,
    index: IndexSettings,
    held: np.ndarray,
    chunks_of: Callable[[np.ndarray], Sequence[Chunk]],
    *,
    previous: Path | None,
    previous_manifest: dict[str, Any] | None,
    embed: bool,
    progress: Callable[[int], None] | None = None,
) -> SecondBuild:
    """The second set over the chunks ``held`` (the first dense index's ids) with ``embedder``:
    the previous version's (folder ``previous``) updated when it was built with the same model and
    kind, else a new one; the vectors from the cache, the missing ones embedded (``embed``) or left
    out (a partial version)."""
    start = time.perf_counter()
    kind = dense_kind(index, len(held))
    dense: Dense | None = None
    entry = second_entry(previous_manifest or {})
    if previous is not None and entry and entry["model"] == embedder.model_name and entry.get("kind") == kind:
        try:
            dense = load_dense(index, previous / str(entry["folder"]), embedder, kind)
        except (CorruptIndexError, IndexMismatchError):
            dense = None  # damaged, or another dimension: built again from the cache
    if dense is None:
        dense = new_dense(index, embedder, kind)
    stale = np.setdiff1d(dense.ids(), held)
    if stale.size:
        dense.remove(stale)
    todo = list(chunks_of(np.setdiff1d(held, dense.ids())))
    corrupt: list[str] = []
    if embed:
        texts = {c.sha256: c.text for c in todo}
        windows, embedded = embed_missing(
            store, embedder, texts, batch_size=BATCH, progress=progress, keep=True, corrupt=corrupt
        )
    else:
        windows, embedded = cached_windows_of(store, embedder, todo, corrupt), 0
        todo = [c for c in todo if c.sha256 in windows]
    add_chunk_vectors(dense, todo, windows)
    return SecondBuild(embedder.model_name, dense, embedded, time.perf_counter() - start, kind)


def second_for_build(
    builder: Any,
    chunks_of: Callable[[np.ndarray], Sequence[Chunk]],
    held: np.ndarray,
    second_model: str | None,
    *,
    embed: bool,
    progress: Callable[[int], None] | None,
    full: bool = False,
) -> SecondBuild | None:
    """The second set of the version ``builder`` (``build.IndexBuilder``) is writing: the model
    ``second_model`` names (``OFF``: none), else the live version's, carried over; None when there is
    none, or when the builder has no way to make the second model (``builder.second_embedder``).
    ``full``: built anew from the cache, not from the live version's."""
    live = builder._live()
    manifest: dict[str, Any] | None = None
    if live is not None:
        try:
            manifest = builder.versions.manifest(live)
        except CorruptIndexError:
            manifest = None
    entry = second_entry(manifest or {})
    model = second_model or (str(entry["model"]) if entry else None)
    if model is None or model == OFF or builder.second_embedder is None:
        return None
    embedder = builder.second_embedder(model)
    if embedder.model_name == builder.embedder.model_name:
        return None  # the first set already is that model's
    previous = builder.versions.directory(live) if live is not None and not full else None
    return build_second(
        builder.store,
        embedder,
        builder.config.index,
        held,
        chunks_of,
        previous=previous,
        previous_manifest=manifest,
        embed=embed,
        progress=progress,
    )
