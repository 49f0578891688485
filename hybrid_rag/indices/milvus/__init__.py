"""The Milvus backend (``index.dense_backend: milvus``, ``bm25.backend: milvus``; ``docs/scale-out.md``).

``dense.py`` the dense index, ``bm25.py`` the keyword one, ``collection.py`` what both share about a
collection, ``client.py`` the connection and chunk fields, ``filters.py`` filters as Milvus
expressions, ``versions.py`` versions behind an alias. Nothing here imports pymilvus at import time.
"""
