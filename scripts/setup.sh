#!/usr/bin/env bash
# Create .venv and install hybrid-rag with its test tools. Safe to re-run.
# torch is pinned to the CPU build first: an unpinned torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[dev,spacy-model,milvus,server,documents]"
echo "hybrid-rag installed in .venv ($(.venv/bin/python -c 'import hybrid_rag; print(hybrid_rag.__version__)'))"
