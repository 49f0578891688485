"""Questions that name a re-export, a field, a variant (issue 37): where the file holding it ranks,
with ``features.member_symbols`` on and off, on the code_questions stores (one-off, not a study).

Six questions written by reading itertools, ninja and rxjs (the pinned packages of
``benchmarks/judged/code``), each naming a member and the file that holds it. The stores are
the ``code_questions`` study's (``--stores``, ingested by this tree: the member rows are there).

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/studies/_member_questions.py \\
        --stores benchmarks/work/code_questions/stores
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import load_settings
from studies import suite

QUESTIONS = (  # (store folder, question, the member it names, the file that holds it)
    ("itertools-0.10.3-1", "what does Position::Middle mean for an element?", "Middle", "with_position.rs"),
    ("itertools-0.10.3-1", "where does Either come from in this crate?", "Either", "lib.rs"),
    ("ninja-1.13.2", "what does mtime_ hold for a node that was never stat'ed?", "mtime_", "graph.h"),
    ("ninja-1.13.2", "when is an edge marked VisitInStack?", "VisitInStack", "graph.h"),
    ("rxjs-7.8.1", "what does resetOnRefCountZero do?", "resetOnRefCountZero", "share.ts"),
    ("rxjs-7.8.1", "what is resetOnSuccess for?", "resetOnSuccess", "retry.ts"),
)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--stores", required=True)
    args = p.parse_args()
    base = load_settings()
    embedder = make_embedder(base.embedding)
    rows = []
    for folder, question, name, want in QUESTIONS:
        store = next((Path(args.stores) / folder).iterdir())
        engine, _ = suite.open_engine(base, store, embedder)
        try:
            ranks = {}
            for label, on in (("on", True), ("off", False)):
                result = engine.query(question, top_k=10, features={"member_symbols": on})
                names = [c.path.rsplit("/", 1)[-1] for c in result.chunks]
                ranks[label] = names.index(want) + 1 if want in names else None
            found = [
                f"{m.symbol.kind} {m.symbol.citation}" for m in engine.symbols(name, mode="exact", limit=5)
            ]
        finally:
            engine.close()
        rows.append({"question": question, "names": name, "file": want, "rank": ranks, "rows": found})
        print(json.dumps(rows[-1]))


if __name__ == "__main__":
    main()
