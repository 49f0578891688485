"""The query log: records, concurrent appends, and a summary that survives corrupt lines."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hybrid_rag.context import ContextBuilder
from hybrid_rag.context.selfcheck import SelfCheck
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.querylog import QueryLog, make_record, summarize
from hybrid_rag.settings import Settings
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, StageTiming, Trace


def _record(total_ms: float, *, retried: bool = False, weak: bool = False) -> dict:
    """A self-checked query's record (it has attempts)."""
    return {
        "stages_ms": {"dense": total_ms / 2, "total": total_ms},
        "confidence": 0.5,
        "retried": retried,
        "weak": weak,
        "attempts": [{"query": "q"}] * (2 if retried else 1),
    }


def _result(query: str, dense: float) -> QueryResult:
    chunk = Chunk(
        1, 1, "a.txt", 0, 1, 2, "fan housings\nare painted", 3, "0" * 64, SourceType.TEXT, "text", "c"
    )
    return QueryResult(
        query,
        "hybrid",
        (ScoredChunk(chunk, 0.7, {"dense": dense}),),
        Trace((StageTiming("dense", 0.002), StageTiming("bm25", 0.001))),
        4,
    )


def test_record_from_a_checked_query_and_its_context(tmp_path):
    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path)})
    query = "how are turbine blades cooled"
    checked = SelfCheck(settings.context, lambda q: _result(q, 0.05)).run(query)
    ctx = ContextBuilder(settings.context, FakeEmbedder(16).embed_passages).build(query, checked.result)
    record = make_record(query, checked.result, checked=checked, context=ctx, timings_ms={"context": 12.5})
    assert record["stages_ms"]["context"] == 12.5
    assert record["stages_ms"]["total"] == pytest.approx(
        sum(v for k, v in record["stages_ms"].items() if k != "total")
    )
    assert record["scores"]["n"] == 1 and record["retried"] is True and len(record["attempts"]) == 3
    assert record["citations"] == [{"id": 1, "chunk_id": 1, "ref": "a.txt:1-2"}]
    log = QueryLog.in_dir(settings.logs_dir)
    log.append(record)
    assert log.path == tmp_path / "logs" / "queries.jsonl"
    assert json.loads(log.path.read_text()) == json.loads(json.dumps(record))


def test_summary_percentiles_shares_and_corrupt_lines(tmp_path):
    log = QueryLog(tmp_path / "q.jsonl")
    for i in range(1, 101):
        log.append(_record(float(i), retried=i % 4 == 0, weak=i % 10 == 0))
    with log.path.open("a") as fh:
        fh.write('{"stages_ms": {"total": 5\n')  # a torn line
        fh.write("[1, 2]\n\n")  # JSON, but not a record; then a blank line (ignored)
    s = summarize(log.path)
    assert s["queries"] == 100 and s["corrupt_lines"] == 2
    assert s["latency_ms"]["total"] == {"p50": 50.5, "p95": pytest.approx(95.05)}
    assert s["latency_ms"]["dense"]["p50"] == 25.25
    assert s["retried_share"] == 0.25 and s["weak_share"] == 0.1
    assert (s["self_checked"], s["retried"], s["weak"]) == (100, 25, 10)


def test_shares_count_only_self_checked_queries(tmp_path):
    """Plain queries and contexts built without the self-check are logged, but they are not the
    denominator of the retried and weak shares."""
    log = QueryLog(tmp_path / "q.jsonl")
    log.append(_record(1.0, retried=True, weak=True))
    for _ in range(3):
        log.append(_record(1.0))
    log.append({"stages_ms": {"total": 1.0}})  # a plain query
    log.append({"stages_ms": {"total": 1.0}, "confidence": 0.1, "weak": True, "retried": False})  # unchecked
    s = summarize(log.path)
    assert (s["queries"], s["self_checked"], s["retried"], s["weak"]) == (6, 4, 1, 1)
    assert s["retried_share"] == 0.25 and s["weak_share"] == 0.25


def test_missing_log_is_zero_queries(tmp_path):
    s = summarize(tmp_path / "absent.jsonl")
    assert s["queries"] == 0 and s["latency_ms"] == {} and s["retried_share"] == 0.0


def _append_many(path: str, worker: int, n: int) -> None:
    log = QueryLog(Path(path))
    for i in range(n):
        log.append({"worker": worker, "i": i, "stages_ms": {"total": 1.0}, "pad": "x" * 3000})


_WORKER = """
import sys
from pathlib import Path
from hybrid_rag.querylog import QueryLog
log = QueryLog(Path(sys.argv[1]))
for i in range(50):
    log.append({"worker": int(sys.argv[2]), "i": i, "stages_ms": {"total": 1.0}, "pad": "x" * 3000})
"""


def test_concurrent_appends_from_threads_and_processes_keep_whole_lines(tmp_path):
    path = tmp_path / "logs" / "queries.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(path), str(100 + w)]) for w in range(3)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda w: _append_many(str(path), w, 50), range(8)))
    assert [p.wait(60) for p in procs] == [0, 0, 0]
    lines = path.read_text().splitlines()
    assert len(lines) == 11 * 50
    seen = {(r["worker"], r["i"]) for r in map(json.loads, lines)}
    assert len(seen) == 11 * 50
    assert summarize(path)["corrupt_lines"] == 0
