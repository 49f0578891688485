"""Evaluation: BEIR loading, ranx metrics on hand-computable runs, run helpers, significance."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from judged_datasets import judged_dataset

from hybrid_rag.errors import InputError
from hybrid_rag.evaluation.metrics import (
    DEFAULT_METRICS,
    EvalReport,
    chunk_run_to_doc_run,
    compare,
    evaluate,
    format_table,
    load_beir,
    ranked,
)

# -- metrics ---------------------------------------------------------------------------------


def test_perfect_run_scores_one_everywhere() -> None:
    qrels = {"q1": {"a": 3, "b": 2, "c": 1}, "q2": {"d": 1}}
    run = {"q1": {"a": 0.9, "b": 0.8, "c": 0.7, "x": 0.1}, "q2": {"d": 5.0, "y": 1.0}}
    report = evaluate(run, qrels, ["ndcg@10", "mrr@10", "recall@50", "recall@100"])
    assert report.means == pytest.approx({"ndcg@10": 1.0, "mrr@10": 1.0, "recall@50": 1.0, "recall@100": 1.0})


def test_relevant_doc_at_rank_two_gives_mrr_half() -> None:
    report = evaluate({"q": {"x": 0.9, "a": 0.5}}, {"q": {"a": 1}}, ["mrr@10"])
    assert report.means["mrr@10"] == pytest.approx(0.5)


def test_graded_ndcg_uses_linear_gains() -> None:
    # run [b, a]: DCG = 1/log2(2) + 2/log2(3); ideal [a, b]: 2/log2(2) + 1/log2(3)
    report = evaluate({"q": {"b": 0.9, "a": 0.8}}, {"q": {"a": 2, "b": 1}}, ["ndcg@10"])
    expected = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert report.means["ndcg@10"] == pytest.approx(expected)


def test_precision_and_recall_count_every_grade_as_relevant() -> None:
    qrels = {"q": {"a": 4, "b": 1, "z": 2}}
    run = {"q": {"a": 0.9, "b": 0.8, "c": 0.7}}
    report = evaluate(run, qrels, ["precision@3", "recall@50"])
    assert report.means["precision@3"] == pytest.approx(2 / 3)
    assert report.means["recall@50"] == pytest.approx(2 / 3)


def test_mrr_is_cut_at_rank_ten() -> None:
    run = {"q": {f"x{i:02d}": 1.0 - i / 100 for i in range(10)} | {"a": 0.0}}
    report = evaluate(run, {"q": {"a": 1}}, ["mrr@10", "mrr@100"])
    assert report.means["mrr@10"] == 0.0
    assert report.means["mrr@100"] == pytest.approx(1 / 11)


def test_query_missing_from_run_counts_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    report = evaluate({"q1": {"a": 1.0}}, qrels, ["ndcg@10", "mrr@10"])
    assert report.per_query["mrr@10"] == {"q1": 1.0, "q2": 0.0}
    assert report.means["ndcg@10"] == pytest.approx(0.5)


def test_empty_result_list_counts_as_zero() -> None:
    report = evaluate({"q1": {"a": 1.0}, "q2": {}}, {"q1": {"a": 1}, "q2": {"b": 1}}, DEFAULT_METRICS)
    assert all(report.per_query[m]["q2"] == 0.0 for m in DEFAULT_METRICS)


def test_unjudged_run_queries_and_zero_grades_are_ignored() -> None:
    qrels = {"q1": {"a": 1, "n": 0}, "q2": {"b": 0}}
    report = evaluate({"q1": {"a": 1.0}, "q3": {"c": 1.0}}, qrels, ["mrr@10"])
    assert report.query_ids == ("q1",)
    assert report.means["mrr@10"] == 1.0


def test_ties_break_by_doc_id() -> None:
    run = {"q": {"b": 1.0, "a": 1.0}}
    assert evaluate(run, {"q": {"a": 1}}, ["mrr@10"]).means["mrr@10"] == 1.0
    assert evaluate(run, {"q": {"b": 1}}, ["mrr@10"]).means["mrr@10"] == 0.5
    assert ranked({"b": 1.0, "a": 1.0, "c": 2.0}) == ["c", "a", "b"]


def test_nan_score_is_rejected() -> None:
    with pytest.raises(ValueError, match="NaN"):
        evaluate({"q": {"a": float("nan")}}, {"q": {"a": 1}}, ["mrr@10"])


def test_unknown_metric_and_empty_qrels_fail_clearly() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["nope@10"])
    with pytest.raises(InputError, match="nothing to evaluate"):
        evaluate({"q": {"a": 1.0}}, {"q": {"a": 0}}, ["mrr@10"])


def test_recall_never_drops_as_k_grows() -> None:
    qrels = {"q": {f"d{i}": 1 for i in range(0, 200, 7)}}
    run = {"q": {f"d{i}": 1.0 / (1 + i) for i in range(200)}}
    ks = [1, 5, 10, 50, 100, 200]
    report = evaluate(run, qrels, [f"recall@{k}" for k in ks])
    values = [report.means[f"recall@{k}"] for k in ks]
    assert values == sorted(values)
    assert values[-1] == 1.0


# -- run helpers -----------------------------------------------------------------------------


def test_chunk_run_keeps_each_docs_best_chunk() -> None:
    chunk_run = {"q": [("a", 0.2), ("b", 0.9), ("a", 0.7), ("b", 0.1)], "empty": []}
    assert chunk_run_to_doc_run(chunk_run) == {"q": {"a": 0.7, "b": 0.9}, "empty": {}}


# -- comparison ------------------------------------------------------------------------------


def _report(per_query: dict[str, float]) -> EvalReport:
    return EvalReport(
        ("mrr@10",), {"mrr@10": sum(per_query.values()) / len(per_query)}, {"mrr@10": per_query}
    )


def test_compare_identical_runs_is_not_significant() -> None:
    a = _report({f"q{i}": (i % 3) / 2 for i in range(12)})
    result = compare(a, a)["mrr@10"]
    assert result.p_value == 1.0
    assert not result.significant
    assert result.delta == 0.0


def test_compare_finds_a_clear_difference() -> None:
    qrels = {f"q{i}": {"a": 1} for i in range(12)}
    better = {q: {"a": 1.0, "x": 0.5} for q in qrels}
    worse = {q: ({"x": 1.0, "a": 0.5} if i % 4 else {"a": 1.0}) for i, q in enumerate(qrels)}
    result = compare(evaluate(worse, qrels), evaluate(better, qrels))["mrr@10"]
    assert result.delta == pytest.approx(1.0 - (3 * 1.0 + 9 * 0.5) / 12)
    assert result.significant and result.p_value < 0.01
    fisher = compare(evaluate(worse, qrels), evaluate(better, qrels), test="fisher")["mrr@10"]
    assert fisher.significant


def test_compare_refuses_different_query_sets() -> None:
    with pytest.raises(ValueError, match="different queries"):
        compare(_report({"q1": 1.0}), _report({"q2": 1.0}))


def test_format_table_lists_runs_and_metrics() -> None:
    table = format_table({"bm25": _report({"q": 0.5})})
    assert table.splitlines()[0] == "| run | mrr@10 |"
    assert "| bm25 | 0.500 |" in table


# -- loading ---------------------------------------------------------------------------------


def _write_beir(root: Path, qrels_lines: list[str], corpus_extra: str = "") -> Path:
    (root / "qrels").mkdir(parents=True)
    corpus = [{"_id": "d1", "title": "T1", "text": "one"}, {"_id": "d2", "text": "two"}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n" + corpus_extra)
    queries = [
        {"_id": "q1", "text": "first"},
        {"_id": "q2", "text": "second"},
        {"_id": "q3", "text": "third"},
    ]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels_lines) + "\n")
    return root


def test_load_beir_keeps_only_queries_with_relevant_docs(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "tiny", ["q1\td1\t2", "q1\td2\t0", "q2\td2\t0", "q9\td1\t1"])
    data = load_beir(root)
    assert data.name == "tiny"
    assert data.corpus == {"d1": ("T1", "one"), "d2": ("", "two")}
    assert data.queries == {"q1": "first"}
    assert data.qrels == {"q1": {"d1": 2}}


def test_load_beir_missing_folder_and_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="dataset folder not found"):
        load_beir(tmp_path / "nope")
    root = _write_beir(tmp_path / "x", ["q1\td1\t1"])
    (root / "qrels" / "test.tsv").unlink()
    with pytest.raises(InputError, match=r"dataset file not found: .*test\.tsv"):
        load_beir(root)


def test_load_beir_names_file_and_line_of_bad_json(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "x", ["q1\td1\t1"], corpus_extra="{not json\n")
    with pytest.raises(InputError, match=r"corpus\.jsonl:3: not valid JSON"):
        load_beir(root)


@pytest.mark.parametrize("bad", ["q1\td1", "q1\td1\thigh"])
def test_load_beir_names_line_of_bad_qrels(tmp_path: Path, bad: str) -> None:
    root = _write_beir(tmp_path / "x", ["q1\td1\t1", bad])
    with pytest.raises(InputError, match=r"test\.tsv:3:"):
        load_beir(root)


@pytest.mark.slow
def test_load_real_cranfield() -> None:
    data = load_beir(judged_dataset("cranfield"))
    assert len(data.corpus) == 1400
    assert len(data.queries) == 225
    assert sum(len(docs) for docs in data.qrels.values()) == 1837
    assert {g for docs in data.qrels.values() for g in docs.values()} == {1, 2, 3, 4}
    # a run that returns each query's judged docs best-first is perfect
    run = {q: {d: float(g) for d, g in docs.items()} for q, docs in data.qrels.items()}
    assert evaluate(run, data.qrels, ["ndcg@10", "mrr@10"]).means == pytest.approx(
        {"ndcg@10": 1.0, "mrr@10": 1.0}
    )
