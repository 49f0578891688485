"""Retrieval evaluation on BEIR-layout test collections, with ranx for the metrics.

Conventions, written once here:

* A run ranks each query's documents by score, highest first; **ties break by document id**
  (string order), and ranx only ever sees those ranks (it breaks ties by a salted hash, so
  raw tied scores would give a different nDCG in every process).
* Relevance: nDCG uses the graded judgements as linear gains (Järvelin & Kekäläinen, as
  trec_eval and BEIR do); MRR, precision and recall count any grade >= 1 as relevant.
* A query in the qrels that the run does not answer scores 0 on every metric; queries in the
  run without judgements are ignored. ``mrr@10`` is the reciprocal rank cut at rank 10.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hybrid_rag.errors import InputError
from hybrid_rag.jsonlines import read_json_lines

DEFAULT_METRICS: tuple[str, ...] = ("ndcg@10", "mrr@10", "precision@3", "recall@50", "recall@100")
Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]
_ABSENT_DOC = "\x00no-result"  # stands in for an empty result list (ranx needs one row a query)


@dataclass(frozen=True)
class BeirDataset:
    """A BEIR test collection; ``queries`` holds only queries with a judged-relevant document."""

    name: str
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> grade (> 0 only)


@dataclass(frozen=True)
class EvalReport:
    """Mean and per-query scores of one run; ``per_query[metric][qid]``."""

    metrics: tuple[str, ...]
    means: dict[str, float]
    per_query: dict[str, dict[str, float]]

    @property
    def query_ids(self) -> tuple[str, ...]:
        return tuple(self.per_query[self.metrics[0]]) if self.metrics else ()

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": list(self.metrics), "means": dict(self.means), "queries": len(self.query_ids)}


@dataclass(frozen=True)
class Comparison:
    """One metric of two runs over the same queries, with a paired significance test."""

    metric: str
    mean_a: float
    mean_b: float
    p_value: float
    significant: bool

    @property
    def delta(self) -> float:
        return self.mean_b - self.mean_a


# -- loading ---------------------------------------------------------------------------------


def load_beir(directory: str | Path) -> BeirDataset:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` from a BEIR folder."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"dataset folder not found: {root}")
    corpus = {
        doc_id: (str(row.get("title") or ""), str(row.get("text") or ""))
        for doc_id, row in _read_jsonl(root / "corpus.jsonl")
    }
    all_queries = {qid: str(row.get("text") or "") for qid, row in _read_jsonl(root / "queries.jsonl")}
    qrels = {
        qid: docs
        for qid, docs in _read_qrels(root / "qrels" / "test.tsv").items()
        if qid in all_queries and docs
    }
    queries = {qid: text for qid, text in all_queries.items() if qid in qrels}
    return BeirDataset(root.name, corpus, queries, qrels)


def _read_jsonl(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    """(``_id``, row) for every non-blank line; a bad line is an InputError naming file and line."""
    if not path.is_file():
        raise InputError(f"dataset file not found: {path}")
    seen: set[str] = set()
    for number, row in read_json_lines(path):
        if isinstance(row, json.JSONDecodeError):
            raise InputError(f"{path}:{number}: not valid JSON ({row.msg})")
        if not isinstance(row, dict) or "_id" not in row:
            raise InputError(f'{path}:{number}: expected an object with an "_id"')
        key = str(row["_id"])
        if key in seen:
            raise InputError(f"{path}:{number}: duplicate _id {key!r}")
        seen.add(key)
        yield key, row


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id -> doc id -> grade, keeping grades > 0; the first line is a header if it says so."""
    if not path.is_file():
        raise InputError(f"dataset file not found: {path}")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if number == 1 and fields[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue
            if not line.strip():
                continue
            if len(fields) != 3:
                raise InputError(f"{path}:{number}: expected query-id<TAB>corpus-id<TAB>score")
            qid, doc_id, raw = (f.strip() for f in fields)
            try:
                grade = int(raw)
            except ValueError:
                raise InputError(f"{path}:{number}: score {raw!r} is not an integer") from None
            qrels.setdefault(qid, {})
            if grade > 0:
                qrels[qid][doc_id] = grade
    return qrels


# -- runs ------------------------------------------------------------------------------------


def ranked(scores: Mapping[str, float]) -> list[str]:
    """Document ids by score, highest first, ties by id; a NaN score is a ValueError."""
    if any(math.isnan(s) for s in scores.values()):
        raise ValueError("a run score is NaN")
    return sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))


def chunk_run_to_doc_run(chunk_run: Mapping[str, Iterable[tuple[str, float]]]) -> dict[str, dict[str, float]]:
    """Per query, ranked (doc id, chunk score) pairs → doc id → the best score of its chunks."""
    return {qid: chunks_to_doc_scores(hits) for qid, hits in chunk_run.items()}


def chunks_to_doc_scores(hits: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Collapse chunk hits to documents, keeping each document's maximum chunk score."""
    best: dict[str, float] = {}
    for doc_id, score in hits:
        if doc_id not in best or score > best[doc_id]:
            best[doc_id] = float(score)
    return best


# -- metrics ---------------------------------------------------------------------------------


def evaluate(run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS) -> EvalReport:
    """Score ``run`` against ``qrels`` (grades > 0) with ranx; see the module docstring for conventions."""
    from ranx import evaluate as ranx_evaluate

    metrics = tuple(metrics)
    if not metrics:
        raise ValueError("no metrics to compute")
    for metric in metrics:
        _check_metric(metric)
    qids = sorted(qid for qid, docs in qrels.items() if any(g > 0 for g in docs.values()))
    if not qids:
        raise InputError("the qrels judge no document relevant, so there is nothing to evaluate")
    ranx_qrels = {qid: {str(d): int(g) for d, g in qrels[qid].items() if g > 0} for qid in qids}
    ranx_run = {}
    for qid in qids:
        order = ranked({str(d): float(s) for d, s in run.get(qid, {}).items()}) or [_ABSENT_DOC]
        ranx_run[qid] = {doc_id: float(len(order) - rank) for rank, doc_id in enumerate(order)}
    # ranx returns a bare array (through a KeyError in 0.3.21) for one metric: always ask for two
    asked = list(metrics) if len(metrics) > 1 else [metrics[0], metrics[0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's uint64 → int64 cast warning on hashed ids
        scores = ranx_evaluate(ranx_qrels, ranx_run, asked, return_mean=False)
    per_query = {m: {qid: float(v) for qid, v in zip(qids, scores[m], strict=True)} for m in metrics}
    means = {m: float(np.mean(list(per_query[m].values()))) for m in metrics}
    return EvalReport(metrics, means, per_query)


def _check_metric(metric: str) -> None:
    """A ValueError naming ``metric`` unless ranx knows it (``name@k``, optionally ``-lN``)."""
    from ranx.meta.evaluate import extract_metric_and_params
    from ranx.metrics import metric_switch

    try:
        metric_switch(extract_metric_and_params(metric)[0])
    except ValueError:
        raise ValueError(
            f"unknown metric {metric!r}; use ranx names such as {', '.join(DEFAULT_METRICS)}"
        ) from None


def compare(
    report_a: EvalReport,
    report_b: EvalReport,
    *,
    test: Literal["student", "fisher"] = "student",
    max_p: float = 0.05,
    n_permutations: int = 1000,
    seed: int = 42,
) -> dict[str, Comparison]:
    """Paired significance test per shared metric (ranx's two-sided paired t-test or Fisher's
    randomisation test) on the per-query scores of two runs over the same queries.

    Identical per-query scores give p = 1 (the t-test alone would say NaN).
    """
    from ranx.statistical_tests import fisher_randomization_test, paired_student_t_test

    if set(report_a.query_ids) != set(report_b.query_ids):
        raise ValueError("the two reports cover different queries; evaluate both runs on the same qrels")
    out: dict[str, Comparison] = {}
    for metric in (m for m in report_a.metrics if m in report_b.metrics):
        qids = report_a.query_ids
        a = np.array([report_a.per_query[metric][q] for q in qids], dtype=np.float64)
        b = np.array([report_b.per_query[metric][q] for q in qids], dtype=np.float64)
        if np.array_equal(a, b):
            p_value = 1.0
        elif test == "student":
            p_value = float(paired_student_t_test(a, b, max_p)[0])
        elif test == "fisher":
            p_value = float(fisher_randomization_test(a, b, n_permutations, max_p, seed)[0])
        else:
            raise ValueError(f"unknown test {test!r}; valid: student, fisher")
        out[metric] = Comparison(metric, float(a.mean()), float(b.mean()), p_value, p_value <= max_p)
    return out


def format_table(reports: Mapping[str, EvalReport], digits: int = 3) -> str:
    """A markdown table: one row a run, one column a metric (the first report's metrics)."""
    if not reports:
        return ""
    metrics = next(iter(reports.values())).metrics
    lines = ["| run | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
    for name, report in reports.items():
        cells = [f"{report.means[m]:.{digits}f}" if m in report.means else "" for m in metrics]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
