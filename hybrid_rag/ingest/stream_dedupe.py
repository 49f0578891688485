"""Near-duplicate checks for a streaming ingest: one file at a time against every chunk kept before.

The index starts with the stored chunks the ingest leaves alone (their MinHash signatures from the
store's cache; missing ones are computed and cached), then keeps each new chunk that repeats none,
so a chunk in a later batch is checked against the earlier batches exactly as one big batch would
be (``dedupe.DuplicateIndex``). New signatures are cached when ``flush`` is called (each commit).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_rag.ingest.dedupe import DuplicateIndex, NearDuplicateFilter
from hybrid_rag.settings import DedupeSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.types import ChunkSpan

STORE_BATCH = 2000  # stored chunks read at a time while the index is filled


@dataclass(frozen=True)
class Duplicate:
    """A chunk that was not stored because it nearly duplicates a kept one."""

    path: str
    start_line: int
    end_line: int
    duplicate_of: str  # sha256 of the kept chunk


class StreamDeduper:
    """Drops the chunks of each file that repeat a kept chunk (``dedupe.enabled`` false: none)."""

    def __init__(self, store: MetadataStore, settings: DedupeSettings, *, replaced: Iterable[str]) -> None:
        self.store = store
        self.settings = settings
        self._signatures: dict[str, Any] = {}  # of kept new chunks, not cached yet
        self._index: DuplicateIndex | None = None
        if settings.enabled:
            self._index = DuplicateIndex(NearDuplicateFilter(settings))
            self._add_stored(set(replaced))

    def filter(self, path: str, spans: Sequence[ChunkSpan]) -> tuple[list[ChunkSpan], list[Duplicate]]:
        """A file's chunks that repeat no kept chunk (kept from now on), and those that do."""
        if self._index is None:
            return list(spans), []
        kept, dropped = [], []
        for sp in spans:
            signature = self._index.finder.signature(sp.text)
            match = self._index.check(sp.sha256, signature)
            if match is None:
                kept.append(sp)
                self._signatures[sp.sha256] = signature
            else:
                dropped.append(Duplicate(path, sp.start_line, sp.end_line, match))
        return kept, dropped

    def flush(self) -> None:
        """Cache the signatures of the chunks kept since the last flush."""
        if self._signatures:
            values = {sha: None if m is None else m.hashvalues for sha, m in self._signatures.items()}
            self.store.put_signatures(self.settings.num_perm, values)
            self._signatures.clear()

    def _add_stored(self, replaced: set[str]) -> None:
        batch: list[tuple[str, str]] = []
        for chunk in self.store.iter_chunks():
            if chunk.path not in replaced:
                batch.append((chunk.sha256, chunk.text))
            if len(batch) >= STORE_BATCH:
                self._add_batch(batch)
                batch = []
        self._add_batch(batch)

    def _add_batch(self, batch: Sequence[tuple[str, str]]) -> None:
        assert self._index is not None
        finder = self._index.finder
        cached = self.store.cached_signatures(self.settings.num_perm, (sha for sha, _ in batch))
        missing = {sha: finder.signature(text) for sha, text in batch if sha not in cached}
        self._signatures.update(missing)
        self.flush()
        for sha, _ in batch:
            values = cached.get(sha)
            if sha in missing:
                self._index.add_existing(sha, missing[sha])
            else:
                self._index.add_existing(sha, None if values is None else finder.from_hashvalues(values))
