"""Near-duplicate checks for a streaming ingest: one file at a time against every chunk kept before.

Deduplication never crosses a line a user can filter by: a chunk is compared only with chunks of
the same *scope*, its collection and its document's metadata (front matter and ``--meta``), so a
``collection=`` or ``meta.`` filter finds a file's text even when another collection or another
metadata value holds the same. Within a scope, the index starts with the stored chunks the ingest
leaves alone (their MinHash signatures from the store's cache; missing ones are computed and
cached), then keeps each new chunk that repeats none, so a chunk in a later batch is checked
against the earlier batches exactly as one big batch would be (``dedupe.DuplicateIndex``). New
signatures are cached when ``flush`` is called (each commit).

A dropped chunk is stored, unindexed, with the sha256 of the chunk it repeats
(``chunks.duplicate_of``). When that chunk leaves its scope (its file deleted or edited),
``revive_duplicates`` checks the orphans again, in id order, against what is left: each is indexed
again or points at another kept chunk. Every write runs it before its index build, so a dropped
text is never lost for good, and a killed write's next run finishes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_rag.ingest.dedupe import DuplicateIndex, NearDuplicateFilter
from hybrid_rag.settings import DedupeSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.types import ChunkSpan

STORE_BATCH = 2000  # stored chunks read at a time while the index is filled
Scope = tuple[str, str]  # (collection, document metadata as the store holds it: JSON or "")


def scope_of(collection: str, meta: Mapping[str, Any]) -> Scope:
    """The scope of a document: its collection and its metadata, serialised as the store does."""
    return collection, (
        json.dumps(dict(meta), sort_keys=True, ensure_ascii=False, default=str) if meta else ""
    )


@dataclass(frozen=True)
class Duplicate:
    """A chunk that was not indexed because it nearly duplicates a kept one."""

    path: str
    start_line: int
    end_line: int
    duplicate_of: str  # sha256 of the kept chunk


class StreamDeduper:
    """Finds the chunks of each file that repeat a kept chunk of its scope (``dedupe.enabled``
    false: none)."""

    def __init__(
        self,
        store: MetadataStore,
        settings: DedupeSettings,
        *,
        replaced: Iterable[str],
        scopes: set[Scope] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self._signatures: dict[str, Any] = {}  # of kept new chunks, not cached yet
        self._finder = NearDuplicateFilter(settings) if settings.enabled else None
        self._indices: dict[Scope, DuplicateIndex] = {}
        if self._finder is not None:
            self._add_stored(set(replaced), scopes)

    def filter(
        self, path: str, spans: Sequence[ChunkSpan], scope: Scope
    ) -> tuple[dict[int, str], list[Duplicate]]:
        """The chunks of a file that repeat a kept chunk of ``scope`` (span index -> the kept
        chunk's sha256) and their report; the others are kept from now on."""
        if self._finder is None:
            return {}, []
        index = self.index(scope)
        duplicate_of, dropped = {}, []
        for i, sp in enumerate(spans):
            signature = self._finder.signature(sp.text)
            match = index.check(sp.sha256, signature)
            if match is None:
                self._signatures[sp.sha256] = signature
            else:
                duplicate_of[i] = match
                dropped.append(Duplicate(path, sp.start_line, sp.end_line, match))
        return duplicate_of, dropped

    def flush(self) -> None:
        """Cache the signatures of the chunks kept since the last flush."""
        if self._signatures:
            values = {sha: None if m is None else m.hashvalues for sha, m in self._signatures.items()}
            self.store.put_signatures(self.settings.num_perm, values)
            self._signatures.clear()

    def index(self, scope: Scope) -> DuplicateIndex:
        assert self._finder is not None
        if scope not in self._indices:
            self._indices[scope] = DuplicateIndex(self._finder)
        return self._indices[scope]

    def _add_stored(self, replaced: set[str], scopes: set[Scope] | None) -> None:
        """Fill the indices with the stored chunks outside ``replaced`` (only ``scopes``' if given)."""
        batch: list[tuple[str, str, Scope]] = []
        for sha, text, path, collection, meta in self.store.iter_dedupe_rows():
            if path not in replaced and (scopes is None or (collection, meta) in scopes):
                batch.append((sha, text, (collection, meta)))
            if len(batch) >= STORE_BATCH:
                self._add_batch(batch)
                batch = []
        self._add_batch(batch)

    def _add_batch(self, batch: Sequence[tuple[str, str, Scope]]) -> None:
        for (sha, _, scope), signature in zip(batch, self.signatures(batch), strict=True):
            self.index(scope).add_existing(sha, signature)

    def signatures(self, rows: Sequence[tuple[str, str, Scope]]) -> list[Any]:
        """The MinHash of each (sha256, text, _) row: from the store's cache, or computed (and cached)."""
        assert self._finder is not None
        finder = self._finder
        cached = self.store.cached_signatures(self.settings.num_perm, (sha for sha, _, _ in rows))
        missing = {sha: finder.signature(text) for sha, text, _ in rows if sha not in cached}
        self._signatures.update(missing)
        self.flush()
        out = []
        for sha, _, _ in rows:
            values = cached.get(sha)
            out.append(
                missing[sha] if sha in missing else None if values is None else finder.from_hashvalues(values)
            )
        return out


def revive_duplicates(store: MetadataStore, settings: DedupeSettings) -> int:
    """Check the dropped near-duplicates whose kept chunk is gone from their scope again, in id
    order, against the indexed chunks of the scope (and each other): each is indexed again, or
    points at the kept chunk it now repeats. One store transaction; returns how many are indexed
    again. With ``dedupe.enabled`` false, every orphan is indexed again."""
    orphans = store.orphaned_duplicates()
    if not orphans:
        return 0
    if not settings.enabled:
        store.rehome_duplicates({chunk_id: None for chunk_id, *_ in orphans})
        return len(orphans)
    scopes = {(collection, meta) for _, _, _, collection, meta in orphans}
    deduper = StreamDeduper(store, settings, replaced=(), scopes=scopes)
    rows = [(sha, text, (collection, meta)) for _, sha, text, collection, meta in orphans]
    decisions: dict[int, str | None] = {}
    signatures = deduper.signatures(rows)
    for (chunk_id, sha, *_), (_, _, scope), signature in zip(orphans, rows, signatures, strict=True):
        decisions[chunk_id] = deduper.index(scope).check(sha, signature)
    store.rehome_duplicates(decisions)
    deduper.flush()
    return sum(1 for target in decisions.values() if target is None)
