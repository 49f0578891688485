#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite, the real-model tests included. Installs Python
# packages into .venv only (scripts/setup.sh); nothing system-wide unless asked:
# SETUP_INSTALL_BROWSER=1 bash scripts/test.sh also apt-get installs chromium for the browser test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# a throwaway PostgreSQL 15 (TEST_POSTGRES_URL) for the store, snapshot and end-to-end tests on
# PostgreSQL; stopped when this script exits. Without initdb/pg_ctl those tests skip (fail in CI).
source scripts/pg_server.sh
.venv/bin/ruff check hybrid_rag tests scripts benchmarks
bash scripts/typecheck.sh  # the protocols and their implementations (mypy, seconds)
.venv/bin/python -m pytest "$@"
