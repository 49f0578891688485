"""hybrid-rag: a local-first, multi-stage retrieval engine for RAG."""

__version__ = "0.1.0"
