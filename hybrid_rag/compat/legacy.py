"""Legacy entry points of the first design, kept for callers that still use them.

``retrieve_for_text`` is plain dense retrieval over one index: no BM25, expansion, fusion,
rerank, MMR, filters or self-check. ``compose_messages`` builds the old chat prompt from at most
``MAX_CHUNKS`` chunks. New code should use ``HybridRetriever.open(...).query(...)`` and
``Engine.context`` (cited, token-budgeted); see docs/migrating.md.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hybrid_rag.types import ScoredChunk

MAX_CHUNKS = 4
LEGACY_SYSTEM = (
    "You are a helpful assistant. Answer the question using only the context below. "
    "If the context does not contain the answer, say you don't know."
)
_PLAIN_DENSE = {
    "expansion": False,
    "multi_query": False,
    "bm25": False,
    "rerank": False,
    "mmr": False,
    "routing": False,
    "thresholds": False,
    "priors": False,
    "parent_context": False,
    "self_check": False,
    "path_roles": False,  # the code rules (retrieval/code_rank.py) move scores: plain cosine order
    "path_match": False,
    "file_coherence": False,
    "definition_first": False,
    "implementation": False,
}
_ENGINES: dict[str | None, Any] = {}
_LOCK = threading.Lock()


def _engine(data_dir: str | os.PathLike[str] | None) -> Any:
    from hybrid_rag.engine import Engine

    key = None if data_dir is None else str(Path(data_dir).resolve())
    with _LOCK:
        if key not in _ENGINES:  # the model loads once per process, as the old module's did
            _ENGINES[key] = Engine.open(data_dir)
        return _ENGINES[key]


def retrieve_for_text(
    text: str, top_k: int = 4, *, data_dir: str | os.PathLike[str] | None = None
) -> list[dict[str, Any]]:
    """The ``top_k`` chunks nearest to ``text`` by cosine, best first, as dicts with ``text``,
    ``path``, ``start_line``, ``end_line``, ``score`` and ``citation`` (``path:start-end``).

    Legacy: dense only, one index, no rerank or filters."""
    result = _engine(data_dir).query(text, top_k=top_k, mode="dense", features=_PLAIN_DENSE)
    return [_as_dict(c) for c in result.chunks]


def _as_dict(c: ScoredChunk) -> dict[str, Any]:
    return {
        "text": c.text,
        "path": c.path,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "score": c.score,
        "citation": c.citation,
    }


def compose_messages(
    question: str, chunks: Sequence[Mapping[str, Any] | ScoredChunk]
) -> list[dict[str, str]]:
    """The old chat prompt: a system message, then one user message with at most ``MAX_CHUNKS``
    chunks (``[n] citation`` and the text each) and the question.

    >>> compose_messages("why?", [{"text": "because", "citation": "a.md:1-2"}])[1]["content"]
    'Context:\\n[1] a.md:1-2\\nbecause\\n\\nQuestion: why?'
    """
    parts = []
    for n, chunk in enumerate(list(chunks)[:MAX_CHUNKS], start=1):
        row = _as_dict(chunk) if isinstance(chunk, ScoredChunk) else chunk
        parts.append(f"[{n}] {row.get('citation') or row.get('path', '')}\n{row.get('text', '')}")
    context = "\n\n".join(parts)
    return [
        {"role": "system", "content": LEGACY_SYSTEM},
        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"},
    ]
