"""How much of a version the dense index covers: the BM25-first ingest's partial versions.

An ingest with ``ingest.publish_bm25_first`` publishes a version as soon as its files are chunked
and stored, with BM25 over every chunk and a dense index over only the chunks whose vectors are in
(none at first), then more such versions as the embedding goes on, and the complete one at the end.
Each manifest records ``dense_chunks`` beside ``chunks``; a version where they differ is partial.
Queries on it are answered by what is built (a chunk without a vector is found by BM25 alone) and
say so: ``dense_status`` gives ``"building, 41%"``.

A partial version is a step, never a rollback target: once a newer version is live the older
partial ones are deleted (``drop_partials``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any, Protocol

from hybrid_rag.errors import CorruptIndexError

DENSE_CHUNKS = "dense_chunks"  # the manifest key: chunks the dense index holds


def dense_status(manifest: Mapping[str, Any]) -> str:
    """``""`` for a complete version, else ``"building, 41%"`` (rounded down, so never 100%).

    >>> dense_status({"chunks": 200, "dense_chunks": 83})
    'building, 41%'
    >>> dense_status({"chunks": 200})
    ''
    """
    chunks = int(manifest.get("chunks") or 0)
    dense = int(manifest.get(DENSE_CHUNKS, chunks))
    if dense >= chunks:
        return ""
    return f"building, {100 * dense // chunks}%"


def is_partial(manifest: Mapping[str, Any]) -> bool:
    return bool(dense_status(manifest))


def dense_note(manifest: Mapping[str, Any]) -> str:
    """The trace's note for a partial version ("" for a complete one)."""
    status = dense_status(manifest)
    if not status:
        return ""
    chunks = int(manifest.get("chunks") or 0)
    dense = int(manifest.get(DENSE_CHUNKS, chunks))
    return (
        f"dense: {status} ({dense:,} of {chunks:,} chunks embedded): the others are found by BM25 only "
        "until the ingest finishes (a killed one: run `hybrid-rag ingest` again)"
    )


class _Versions(Protocol):
    def versions(self) -> list[int]: ...
    def manifest(self, version: int) -> dict[str, Any]: ...
    def directory(self, version: Any) -> Any: ...


def drop_partials(versions: _Versions, live: int) -> list[int]:
    """Delete the partial versions older than ``live`` (the steps of an ingest that has moved on)."""
    dropped = []
    for version in versions.versions():
        if version >= live:
            continue
        try:
            partial = is_partial(versions.manifest(version))
        except CorruptIndexError:
            continue  # prune's business, not ours
        if partial:
            shutil.rmtree(versions.directory(version), ignore_errors=True)
            dropped.append(version)
    return dropped
