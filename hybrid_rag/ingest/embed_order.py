"""Which stored chunks the dense fill embeds first: by their file's role (``code/roles.py``).

A BM25-first ingest (``fill.py``) embeds the chunks whose vectors are missing in batches and
publishes a partial version every ``ingest.publish_every_seconds``. Questions about a repository
hit its implementation first, so its chunks are embedded first: ``ingest.embed_order`` lists the
roles in order (default: the implementation, prose, config and re-exports, then tests, examples,
benchmarks and fixtures, then vendored, generated and minified files last); within a role, the
store's chunk order (files as they were written). A role in ``ingest.embed_never`` is not embedded
at all (nor by any later build: ``indices/build.py`` reads the same setting), so it stays BM25-only.
The order changes only when vectors arrive: a complete index holds the same vectors either way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from hybrid_rag.code.roles import EMBED_ORDER, chunk_role
from hybrid_rag.paths import ingested_root
from hybrid_rag.store import MetadataStore


def role_rank(order: Sequence[str]) -> dict[str, int]:
    """role -> its place: the listed roles first, in their order, then the others in the default
    order's (``code.roles.EMBED_ORDER``)."""
    listed = list(dict.fromkeys(order))
    return {role: i for i, role in enumerate(listed + [r for r in EMBED_ORDER if r not in listed])}


def embed_plan(
    todo: Mapping[str, int],
    paths: Mapping[int, str],
    root: str | None,
    order: Sequence[str],
    never: Collection[str] = (),
) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """``todo`` (sha256 -> a chunk id holding the text) in the order to embed it, and the chunks
    left out by ``never`` (role -> count). A chunk whose path is unknown counts as ``source``."""
    rank = role_rank(order)
    keyed: list[tuple[int, int, str]] = []
    skipped: dict[str, int] = {}
    for sha, chunk_id in todo.items():
        path = paths.get(chunk_id)
        role = chunk_role(path, root) if path is not None else "source"
        if role in never:
            skipped[role] = skipped.get(role, 0) + 1
            continue
        keyed.append((rank[role], chunk_id, sha))
    keyed.sort()
    return [(sha, chunk_id) for _, chunk_id, sha in keyed], skipped


def ordered_todo(
    store: MetadataStore, todo: Mapping[str, int], order: Sequence[str], never: Collection[str] = ()
) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """``embed_plan`` over the store's chunk paths, read relative to the ingested root."""
    if not todo:
        return [], {}
    return embed_plan(todo, store.chunk_paths(), ingested_root(*store.path_bounds()), order, never)
