"""What the kept index versions read from the store, and garbage collection of the rest.

Every version's manifest records ``store_state``, the store generation it was built from. The
store keeps retired rows (old revisions of files, deleted files) so that a rollback serves exactly
what the version served; once the oldest kept version was built at state S, no kept version reads
a row retired at S or before, and ``collect`` deletes those (one store transaction). A manifest
without ``store_state`` (built before snapshots) counts as state 0: it keeps every retired row.
"""

from __future__ import annotations

from typing import Any, Protocol

from hybrid_rag.errors import StoreError
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.readers import reader_name

STORE_STATE = "store_state"  # the manifest key
__all__ = ["STORE_STATE", "check_unchanged", "collect", "oldest_kept_state", "reader_name"]


class _Versions(Protocol):
    def versions(self) -> list[int]: ...
    def manifest(self, version: int) -> dict[str, Any]: ...


def oldest_kept_state(versions: _Versions, current_state: int) -> int:
    """The store state of the oldest version on disk (or in Milvus); ``current_state`` when none is."""
    states = [int(versions.manifest(v).get(STORE_STATE, 0)) for v in versions.versions()]
    return min(states, default=current_state)


def collect(store: MetadataStore, versions: _Versions, reader: str | None = None) -> dict[str, int]:
    """Delete the retired rows no kept version reads (run after ``prune``, under the writer lock).

    On a shared store (several data dirs, docs/scale-out.md) each data dir ``reader`` records the
    oldest state its kept versions read, and the rows any of them reads are kept: one host's
    pruning never deletes what another host's live version serves."""
    oldest = oldest_kept_state(versions, store.generation())
    if reader is not None and store.shared:
        store.hold_state(reader, oldest)
        oldest = min([oldest, *store.held_states().values()])
    return store.collect_garbage(oldest)


def check_unchanged(store: MetadataStore, state: int) -> None:
    """StoreError unless the store is still at ``state``: an index built from an older state is
    never published (another process wrote meanwhile, outside the writer lock)."""
    now = store.generation()
    if now != state:
        raise StoreError(
            f"the store changed while the index was built (state {state} -> {now}: another writer): "
            "nothing was published; run the command again"
        )
