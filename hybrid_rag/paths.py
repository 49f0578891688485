"""How a stored path is shown: the one rule every output follows (CLI, ``--json``, HTTP, MCP).

The store keeps each document's absolute path (filters, ``delete`` and re-ingest match on it).
Outputs show it relative to the **ingested root**: the deepest folder that holds every document
in the store (for ``ingest .`` that folder; for ``ingest docs/ src/`` their parent, so
``docs/guide.md`` and ``src/app.py`` stay apart). A path outside that root, or a path that was
never absolute (an import's or a dataset's document id), is shown as stored. ``absolute_paths``
(``--absolute-paths`` on the CLI, ``"absolute_paths": true`` over HTTP) shows stored paths.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from pathlib import Path

from hybrid_rag.types import QueryResult


def ingested_root(first: str | None, last: str | None) -> str | None:
    """The deepest folder holding every stored path, from the first and last path in sort order
    (their common prefix is every path's); None when the paths are not absolute or none exist."""
    if not first or not last or not first.startswith("/") or not last.startswith("/"):
        return None
    if first == last:
        return posixpath.dirname(first) or None
    common = posixpath.commonprefix([first, last])
    root = common[: common.rfind("/")]  # cut back to a whole folder name
    return root or None


def display_path(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` when it lies below it; otherwise ``path`` as stored."""
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path


def stored_path(path: str, root: str | None) -> str:
    """The stored path a shown ``path`` stands for: joined to ``root`` when it is relative (the
    inverse of ``display_path`` for the paths it shortened); an absolute path as given."""
    return posixpath.join(root, path) if root and not path.startswith("/") else path


def shown_result(result: QueryResult, root: str | None) -> QueryResult:
    """``result`` with every chunk's and parent's path shown by ``display_path`` (ids, scores and
    texts unchanged), so the context, its citations and every ``to_dict`` built from it agree."""
    if not root:
        return result
    chunks = tuple(
        dataclasses.replace(sc, chunk=dataclasses.replace(sc.chunk, path=display_path(sc.path, root)))
        for sc in result.chunks
    )
    parents = {
        cid: dataclasses.replace(p, path=display_path(p.path, root)) for cid, p in result.parents.items()
    }
    return dataclasses.replace(result, chunks=chunks, parents=parents)


def model_cache_dir() -> Path:
    """Where built model files live: ``HYBRID_RAG_MODEL_CACHE`` or ``~/.cache/hybrid-rag/models``."""
    env = os.environ.get("HYBRID_RAG_MODEL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "hybrid-rag" / "models"
