"""Drop-in APIs of the retrieval systems hybrid-rag replaces (see docs/migrating.md).

``DocumentRetriever`` (a chat bot's cosine search over ``embeddings.json``) and ``EmbeddingStore``
(cosine search over ``embeddings.jsonl``) keep their originals' contracts, with numpy doing the
maths; nothing here loads a model or touches the hybrid-rag store. ``retrieve_for_text`` and
``compose_messages`` are the first design's legacy functions (``legacy.py``: dense retrieval over
an ingested data dir, and the old four-chunk prompt).
"""

from hybrid_rag.compat.document_retriever import (
    DocumentRetriever,
    IndexCorruptedError,
    IndexNotFoundError,
    RetrieverError,
    SearchResult,
)
from hybrid_rag.compat.embedding_store import EmbeddingStore
from hybrid_rag.compat.legacy import compose_messages, retrieve_for_text

__all__ = [
    "DocumentRetriever",
    "EmbeddingStore",
    "IndexCorruptedError",
    "IndexNotFoundError",
    "RetrieverError",
    "SearchResult",
    "compose_messages",
    "retrieve_for_text",
]
