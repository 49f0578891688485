#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite, the real-model tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check hybrid_rag tests scripts benchmarks
.venv/bin/python -m pytest "$@"
