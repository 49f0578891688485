#!/usr/bin/env bash
# Set up (if needed), ingest a folder, and answer a question with cited context.
#   bash scripts/demo.sh [PATH] [QUESTION]
# Defaults: this repository, and a question about its own code.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-.}
question=${2:-"How does reciprocal rank fusion break ties between chunks?"}
bash scripts/setup.sh --no-torch >/dev/null
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/hybrid-rag ingest "$target"
.venv/bin/hybrid-rag ask "$question"
