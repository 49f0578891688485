#!/usr/bin/env bash
# Set up (if needed), ingest a folder, and answer a question with cited context.
#   bash scripts/demo.sh [PATH] [QUESTION]
# Defaults: this repository (into ./data), and a question about its own code. A PATH of your own
# gets a data dir of its own (data/demo/<name>-<hash of its absolute path>), so the answer comes
# from that folder alone and the same folder again reuses its index.
set -euo pipefail
target=${1:-}
question=${2:-"How does reciprocal rank fusion break ties between chunks?"}
if [ -n "$target" ]; then
  # the caller's path (a folder, a file or a zip), resolved before leaving the caller's directory
  [ -e "$target" ] || { echo "demo: no such file or folder: $target" >&2; exit 2; }
  target=$(cd "$(dirname "$target")" && printf '%s/%s' "$(pwd -P)" "$(basename "$target")")
  target=${target%/.}
fi
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-torch >/dev/null
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

# ingest; an ingest of more than 1 MB is searchable by BM25 as soon as its files are stored
# (docs/first-run.md), so the first answer comes then, while the vectors fill in; the cited
# context of `ask` comes when the ingest is done
demo() {  # PATH [DATA_DIR]: the default data dir (./data, or HYBRID_RAG_HOME) without one
  local args=() live="${HYBRID_RAG_HOME:-data}/indices/CURRENT"
  if [ -n "${2:-}" ]; then args=(--data-dir "$2"); live="$2/indices/CURRENT"; fi
  .venv/bin/hybrid-rag "${args[@]}" ingest "$1" &
  local ingest=$!
  while kill -0 "$ingest" 2>/dev/null && [ ! -f "$live" ]; do sleep 1; done
  if kill -0 "$ingest" 2>/dev/null; then
    echo "demo: searchable while the ingest goes on; a first answer (the top 3):" >&2
    .venv/bin/hybrid-rag "${args[@]}" query "$question" --top-k 3 || true
  fi
  wait "$ingest"
  .venv/bin/hybrid-rag "${args[@]}" ask "$question"
}
if [ -z "$target" ] || [ "$target" = "$(pwd -P)" ]; then
  demo .
else
  name=$(printf '%s' "$(basename "$target")" | tr -c 'A-Za-z0-9._-' '_')
  data="data/demo/${name}-$(printf '%s' "$target" | cksum | cut -d' ' -f1)"
  echo "demo: $target gets its own data dir: $data" >&2
  demo "$target" "$data"
fi
