"""The index build of a one-file update, against a full build of the same store, at 1k-1M chunks.

The scale study's stores (``benchmarks/work/scale/<N>``, built by its ``_scale_corpus.py``) and its
``update`` measurement, run alone: a timed full build of the exact index first, then
``--updates`` changed files ingested one after the other in the same process (the first also
loads the spaCy tokenizer). Measured again after the incremental build stopped reading every
chunk row (``indices/build.py`` ``StoreChunks``): RESULTS.md#scale-on-one-machine has the figures
from before.

    .venv/bin/python benchmarks/harness.py run index_updates [--sizes 20000 100000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _scale_corpus as corpus_mod
from _scale_render import _updates
from scale import child

SIZES = (1_000, 10_000, 20_000, 100_000, 1_000_000)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    p.add_argument("--updates", type=int, default=4, help="one-file updates a size (median reported)")
    p.add_argument("--work", default=str(corpus_mod.WORK))


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"protocol": {"updates": args.updates, "corpus": corpus_mod.CORPUS_FORMAT}}
    rows = []
    for n in args.sizes:
        if corpus_mod.read_build(Path(args.work), n) is None:
            rows.append({"size": n, "error": "no store: run the scale study first"})
            continue
        corpus_mod.log(f"updates at {n} chunks")
        rows.append(child("update", args, size=n, full_first=True))
    result["updates"] = rows
    return result


def render(result: dict[str, Any]) -> str:
    return "\n".join(_updates(result)).strip()  # the harness adds the machine and load line
