"""The example index in docs/examples (``hybrid-rag import docs/examples/embeddings.jsonl`` in the
README) is searched by the demo, so what its rows state about the code is what the code does: the
fusion row's tie rule is ``retrieval/fusion.py``'s (ascending chunk id, whatever the lists' order)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hybrid_rag.retrieval.fusion import reciprocal_rank_fusion, zscore_fusion
from hybrid_rag.types import Hit

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "embeddings.jsonl"


def rows() -> list[dict]:
    return [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]


def tie_statement() -> str:
    (text,) = [r["text"] for r in rows() if re.search(r"\bties?\b", r["text"])]
    return text


def test_the_fusion_example_states_the_tie_rule_of_fusion_py() -> None:
    assert re.search(r"ties are broken by ascending chunk id", tie_statement()), tie_statement()
    assert "first list" not in tie_statement()


def test_the_tie_rule_the_example_states_holds_whatever_the_lists_order() -> None:
    # 7 and 3 tie in RRF (each first in one list) and in zscore (mirror images): the lower id first
    a, b = [Hit(7, 2.0), Hit(3, 1.0)], [Hit(3, 2.0), Hit(7, 1.0)]
    for runs in ({"bm25": a, "dense": b}, {"bm25": b, "dense": a}, {"a": a, "b": b}, {"b": a, "a": b}):
        assert [f.id for f in reciprocal_rank_fusion(runs)] == [3, 7]
        assert [f.id for f in zscore_fusion(runs, dict.fromkeys(runs, 1.0))] == [3, 7]
