"""``hybrid-rag serve``: the HTTP API over ``Engine`` (FastAPI on uvicorn; ``pip install
'hybrid-rag[server]'``). Modules: ``app`` the routes, ``service`` what they share, ``auth`` API
keys, ``limits`` request bodies and limits, ``roots`` ingest-root confinement, ``jobs`` the writer
and job records, ``metrics`` Prometheus, ``errors`` error -> status, ``shapes`` the JSON shapes,
``run`` uvicorn."""
