#!/usr/bin/env python
"""Rebuild the dense and BM25 indices from the MetadataStore into a new, validated version.

Run monthly (cron), or after changing BM25 or embedding settings:

    0 3 1 * *  cd /path/to/project && .venv/bin/python scripts/rebuild_indices.py --data-dir data

Readers keep answering from the old version until the new one is swapped in atomically.
Same as `hybrid-rag rebuild`; this script exists for schedulers that prefer a file to run.
"""

from __future__ import annotations

import sys

from hybrid_rag.cli import main

if __name__ == "__main__":
    sys.exit(main([*sys.argv[1:], "rebuild"]))
