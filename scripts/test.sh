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
# pytest in parallel, one worker a CPU (pytest-xdist; PYTEST_WORKERS=N for another count, 0 for a
# serial run), else serially, saying why. Each worker has its own temp dirs, ports (0), databases
# and environment: docs/contributing.md#tests-in-parallel says what a test must not share.
workers=${PYTEST_WORKERS:-$(.venv/bin/python -c 'import os; print(os.cpu_count() or 1)')}
if [ "$workers" != 0 ] && .venv/bin/python -c 'import xdist' 2>/dev/null; then
  .venv/bin/python -m pytest -n "$workers" --dist loadscope "$@"  # a module on one worker: see docs
else
  [ "$workers" = 0 ] || echo "test.sh: pytest-xdist is not installed: the tests run serially (scripts/setup.sh installs it)" >&2
  .venv/bin/python -m pytest "$@"
fi
