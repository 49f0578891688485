"""Drop-in APIs of the retrieval systems hybrid-rag replaces (see docs/migrating.md).

``DocumentRetriever`` (a chat bot's cosine search over ``embeddings.json``) and ``EmbeddingStore``
(cosine search over ``embeddings.jsonl``) keep their originals' contracts, with numpy doing the
maths; nothing here loads a model or touches the hybrid-rag store.
"""

from hybrid_rag.compat.document_retriever import (
    DocumentRetriever,
    IndexCorruptedError,
    IndexNotFoundError,
    RetrieverError,
    SearchResult,
)
from hybrid_rag.compat.embedding_store import EmbeddingStore

__all__ = [
    "DocumentRetriever",
    "EmbeddingStore",
    "IndexCorruptedError",
    "IndexNotFoundError",
    "RetrieverError",
    "SearchResult",
]
