"""Retrievers for the frameworks most RAG applications run on, as adapters over the engine.

Each module imports its framework only when it is imported itself (the extras ``[langchain]``,
``[llamaindex]``, ``[haystack]``); ``hybrid_rag.integrations`` alone imports none of them::

    from hybrid_rag.integrations.langchain import HybridRagRetriever       # LangChain BaseRetriever
    from hybrid_rag.integrations.llamaindex import HybridRagRetriever      # LlamaIndex BaseRetriever
    from hybrid_rag.integrations.haystack import HybridRagRetriever        # Haystack @component

All three search through ``source.Source``: an ``Engine`` (or a data dir it opens), or a remote
``hybrid_rag.client.Client``; they add no retrieval logic and raise the engine's own errors.
"""
