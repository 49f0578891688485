#!/usr/bin/env bash
# Create .venv and install hybrid-rag with its test tools. Safe to re-run.
# torch is pinned to the CPU build first: an unpinned torch pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[dev,spacy-model,milvus,server,postgres,documents]"
# the framework retrievers, watch, and what their tests and the web page's browser test drive
.venv/bin/python -m pip install --quiet -e ".[langchain,llamaindex,haystack,watch,integrations-test]"
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
echo "hybrid-rag installed in .venv ($(.venv/bin/python -c 'import hybrid_rag; print(hybrid_rag.__version__)'))"
