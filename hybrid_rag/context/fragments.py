"""Which retrieved chunks are pieces of an over-long line, and on which side each was cut.

``chunking.py`` cuts a line longer than ``chunking.max_tokens`` into pieces, in order, each with
``start_line == end_line``; no other chunk holds that line. So a chunk is a piece when another
chunk of its document holds only the same line, and its place among them (chunk ids follow the
chunker's order within a document) says whether the line goes on before and after it. A piece
whose siblings were all dropped as near-duplicates (``dedupe``) looks like a whole line.
"""

from __future__ import annotations

from collections.abc import Sequence

from hybrid_rag.store import MetadataStore
from hybrid_rag.types import ScoredChunk

Cuts = tuple[bool, bool]  # (cut before, cut after)


def fragment_cuts(store: MetadataStore, chunks: Sequence[ScoredChunk]) -> dict[int, Cuts]:
    """``{chunk id: (cut before, cut after)}`` for the chunks that are pieces of a longer line.

    One query when every chunk on those lines is among ``chunks`` (the usual case: no pieces, or
    all of them retrieved), else one a line."""
    where = {c.id: (c.chunk.document_id, c.start_line) for c in chunks if c.start_line == c.end_line}
    if not where or not store.exists:
        return {}
    lines = sorted(set(where.values()))
    found = store.single_line_chunk_ids(lines)
    groups: dict[tuple[int, int], list[int]] = {}
    if set(found) <= set(where):
        for cid in found:
            groups.setdefault(where[cid], []).append(cid)
    else:
        groups = {line: store.single_line_chunk_ids([line]) for line in lines}
    out: dict[int, Cuts] = {}
    for pieces in groups.values():
        if len(pieces) > 1:
            out.update({cid: (k > 0, k < len(pieces) - 1) for k, cid in enumerate(pieces)})
    return out
