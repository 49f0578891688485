"""The fusion-rules study (``benchmarks/studies/fusion_rules.py``, RESULTS.md#fusion-rules) fuses, for
every rule, the very lists one ``Engine.query`` built: its offline default is the engine's own
answer on every question, ``dbsf`` over the completed lists ranks as the default does, and the
engine's fusion step is left as it was after the run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from engine_fixtures import make_settings

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from studies.fusion_rules import DEFAULT, RULES, measure, render, summarize  # noqa: E402

TOPICS = {
    "d1": "Password resets: a reset link is valid for fifteen minutes.",
    "d2": "Backups run every night and are kept for thirty days.",
    "d3": "The service is deployed with docker compose behind nginx.",
    "d4": "Tokens are valid until revoked and can be reset from the console.",
    "d5": "The reactor coolant pressure holds steady while the valve is open.",
    "d6": "A polygon's area is computed by the shoelace formula.",
}
QUESTIONS = {
    "q1": ("how long is a reset link valid", "d1"),
    "q2": ("how long are backups kept", "d2"),
    "q3": ("what sits in front of the service", "d3"),
    "q4": ("when does a token stop being valid", "d4"),
    "q5": ("coolant pressure when the valve opens", "d5"),
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict:
    dataset = BeirDataset(
        "tiny",
        {d: ("", text) for d, text in TOPICS.items()},
        {q: text for q, (text, _) in QUESTIONS.items()},
        {q: {d: 1} for q, (_, d) in QUESTIONS.items()},
    )
    tmp = tmp_path_factory.mktemp("fusion-rules")
    engine = Engine(make_settings(tmp))
    try:
        ingest_dataset(engine, dataset)
        own_fuse = engine.retriever.fuse
        row = measure(dataset, engine)
        assert engine.retriever.fuse == own_fuse  # the engine's step is restored
    finally:
        engine.close()
    return row


def test_the_offline_default_is_the_engines_own_answer(measured: dict) -> None:
    assert measured["agree"] == 1.0
    assert measured["per_query"][DEFAULT] == measured["per_query"]["engine"]
    assert set(RULES) <= set(measured["per_query"])


def test_dbsf_over_completed_lists_is_the_default_question_by_question(measured: dict) -> None:
    assert measured["per_query"]["dbsf"] == measured["per_query"][DEFAULT]


def test_the_committed_summary_has_each_rules_paired_difference(measured: dict) -> None:
    row = summarize({"model": "fake", "ingest_seconds": 0.0, **measured})
    assert "per_query" not in row
    assert row["rules"][DEFAULT]["mrr@10"]["diff"] == 0.0
    table = render({"sets": {"tiny": row}})
    assert "| default | **" in table and "| rrf |" in table
