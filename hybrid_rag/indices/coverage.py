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
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol

from hybrid_rag.code.roles import chunk_role
from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.paths import display_path

DENSE_CHUNKS = "dense_chunks"  # the manifest key: chunks the dense index holds
# the manifest key: the chunks without a vector, by role and by top folder ("roles", "folders":
# not embedded yet) and the roles ``ingest.embed_never`` keeps out for good ("never")
DENSE_PENDING = "dense_pending"
FOLDERS_SHOWN = 3  # the note names the folders holding the most chunks without a vector


def pending_summary(paths: Iterable[str], root: str | None, never: Collection[str] = ()) -> dict[str, Any]:
    """The manifest's ``dense_pending`` for the chunks at ``paths`` (one path per chunk) that the
    dense index lacks: counts by role and by top folder (relative to ``root``), never-roles apart.

    >>> pending_summary(["/r/tests/a.py", "/r/tests/b.py", "/r/vendor/x.js"], "/r", ["vendored"])
    {'roles': {'test': 2}, 'folders': {'tests/': 2}, 'never': {'vendored': 1}}
    """
    roles: dict[str, int] = {}
    folders: dict[str, int] = {}
    kept_out: dict[str, int] = {}
    for path in paths:
        role = chunk_role(path, root)
        if role in never:
            kept_out[role] = kept_out.get(role, 0) + 1
            continue
        roles[role] = roles.get(role, 0) + 1
        shown = display_path(path, root)
        folder = shown.split("/", 1)[0] + "/" if "/" in shown.lstrip("/") else "./"
        folders[folder] = folders.get(folder, 0) + 1
    return {"roles": roles, "folders": folders, "never": kept_out}


def _never_chunks(manifest: Mapping[str, Any]) -> int:
    pending = manifest.get(DENSE_PENDING) or {}
    return sum(int(n) for n in (pending.get("never") or {}).values())


def dense_status(manifest: Mapping[str, Any]) -> str:
    """``""`` for a complete version, else ``"building, 41%"`` (rounded down, so never 100%).

    >>> dense_status({"chunks": 200, "dense_chunks": 83})
    'building, 41%'
    >>> dense_status({"chunks": 200})
    ''
    """
    chunks = int(manifest.get("chunks") or 0)
    dense = int(manifest.get(DENSE_CHUNKS, chunks))
    target = chunks - _never_chunks(manifest)  # ``ingest.embed_never``'s chunks are not coming
    if dense >= target:
        return ""
    return f"building, {100 * dense // max(target, 1)}%"


def is_partial(manifest: Mapping[str, Any]) -> bool:
    return bool(dense_status(manifest))


def _counts(counts: Mapping[str, int], limit: int | None = None) -> str:
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return ", ".join(f"{name} {n:,}" for name, n in top)


def pending_line(manifest: Mapping[str, Any]) -> str:
    """One line: which roles and folders are BM25-only yet, and which for good ("" if none).

    >>> pending_line({"dense_pending": {"roles": {"test": 2}, "folders": {"tests/": 2},
    ...                                 "never": {"vendored": 1}}})
    'not dense yet: test 2 chunks (in tests/ 2); never embedded (ingest.embed_never): vendored 1'
    """
    pending = manifest.get(DENSE_PENDING) or {}
    parts = []
    if pending.get("roles"):
        folders = _counts(pending.get("folders") or {}, FOLDERS_SHOWN)
        where = f" (in {folders})" if folders else ""
        parts.append(f"not dense yet: {_counts(pending['roles'])} chunks{where}")
    if pending.get("never"):
        parts.append(f"never embedded (ingest.embed_never): {_counts(pending['never'])}")
    return "; ".join(parts)


def dense_note(manifest: Mapping[str, Any]) -> str:
    """The trace's note for a partial version, or for a complete one whose ``ingest.embed_never``
    roles are BM25-only ("" for a complete one that embedded everything)."""
    status = dense_status(manifest)
    line = pending_line(manifest)
    if not status:
        return f"dense: {line}: found by BM25 only" if line else ""
    chunks = int(manifest.get("chunks") or 0)
    dense = int(manifest.get(DENSE_CHUNKS, chunks))
    note = (
        f"dense: {status} ({dense:,} of {chunks:,} chunks embedded): the others are found by BM25 only "
        "until the ingest finishes (a killed one: run `hybrid-rag ingest` again)"
    )
    return f"{note}; {line}" if line else note


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
