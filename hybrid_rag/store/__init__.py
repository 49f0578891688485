"""The metadata store (SQLite through SQLAlchemy): documents, chunks, caches, index versions."""

from hybrid_rag.store.store import DocumentRecord, FileChunks, IndexVersionRecord, MetadataStore

__all__ = ["DocumentRecord", "FileChunks", "IndexVersionRecord", "MetadataStore"]
