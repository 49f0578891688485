"""Hand-made documents written to a MetadataStore with the sizes, dates and line spans a filter test
chooses (shared by the SQL filter tests and the Milvus push-down tests)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

import pytest

import hybrid_rag.store.documents as store_module  # its write_files stamps ingested_at
from hybrid_rag.store import FileChunks, MetadataStore
from hybrid_rag.types import ChunkSpan, LoadedFile, SourceType

# path, collection, source_type, language, size, mtime (ISO, UTC), ingested_at (ISO, UTC),
# and each chunk's (start line, end line, tokens)
Doc = tuple[str, str, str, str, int, str, str, list[tuple[int, int, int]]]


def write_documents(
    store: MetadataStore, docs: Sequence[Doc], meta: Mapping[str, tuple[dict, list[dict]]] | None = None
) -> None:
    """Write each document as ingested at its own ``ingested_at`` (the store's clock is replaced);
    ``meta`` gives a path its document metadata and each of its chunks' own."""
    mp = pytest.MonkeyPatch()
    for path, collection, kind, language, size, mtime, ingested, spans in docs:
        at = datetime.fromisoformat(ingested).replace(tzinfo=timezone.utc)

        class _Clock(datetime):
            @classmethod
            def now(cls, tz=None):  # type: ignore[override]
                return at  # noqa: B023 (used at once, inside this iteration)

        mp.setattr(store_module, "datetime", _Clock)
        text = "\n".join(f"line {i} of {path}" for i in range(1, spans[-1][1] + 1))
        modified = datetime.fromisoformat(mtime).replace(tzinfo=timezone.utc).timestamp()
        digest = hashlib.sha256(path.encode()).hexdigest()
        doc_meta, chunk_metas = (meta or {}).get(path, ({}, []))
        loaded = LoadedFile(path, text, digest, size, modified, SourceType(kind), language, doc_meta)
        chunk_spans = [
            ChunkSpan(
                f"{path}:{a}-{b}",
                a,
                b,
                n,
                hashlib.sha256(f"{path}{a}".encode()).hexdigest(),
                chunk_metas[i] if i < len(chunk_metas) else {},
            )
            for i, (a, b, n) in enumerate(spans)
        ]
        store.write_files([FileChunks(loaded, chunk_spans)], collection=collection)
    mp.undo()
