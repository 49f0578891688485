"""The query log: one JSON line per query in ``<logs_dir>/queries.jsonl``, and its summary.

A record holds the stage latencies (ms), the score distribution of the results, the trace's
notes, the self-check's confidence, weak verdict and attempts (each with its own stage
latencies), and the citations the context chose. Appends are safe across threads and
processes: the file is opened with ``O_APPEND`` and each record is one ``os.write`` of one
line (Linux appends such a write whole, at the end of the file).
``summarize`` reads the log back; a line that is not a JSON object is skipped and counted.
A log that cannot be written (a full disk, no permission) never fails the query it records: one
warning on stderr, once per log, and the queries go on unlogged.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # only for annotations: a log writer needs none of the query machinery
    from hybrid_rag.context.render import Context
    from hybrid_rag.context.selfcheck import Checked
    from hybrid_rag.types import QueryResult

LOG_NAME = "queries.jsonl"


def score_stats(scores: list[float]) -> dict[str, float | int]:
    """Count, min, max, mean and median of the final scores (only the count when there are none)."""
    if not scores:
        return {"n": 0}
    arr = np.asarray(scores, dtype=np.float64)
    return {
        "n": len(scores),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "mean": float(arr.mean()),
        "p50": float(np.median(arr)),
    }


def make_record(
    query: str,
    result: QueryResult,
    *,
    checked: Checked | None = None,
    context: Context | None = None,
    timings_ms: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The log record of one query: ``result`` as retrieved (for a context, ``context.result``,
    whose trace holds the context's stages too). ``timings_ms`` adds stages measured outside the
    trace (e.g. ``{"generate": 900.0}``); ``total`` is the sum of all stages. Only a ``checked``
    query has ``attempts``: ``summarize`` counts those as the self-checked ones."""
    stages: dict[str, float] = {}
    for t in result.trace.timings:
        stages[t.stage] = stages.get(t.stage, 0.0) + t.seconds * 1000.0
    for stage, ms in (timings_ms or {}).items():
        stages[stage] = stages.get(stage, 0.0) + float(ms)
    stages["total"] = sum(stages.values())
    record: dict[str, Any] = {
        "ts": round(time.time(), 3),
        "query": query,
        "mode": result.mode,
        "index_version": result.index_version,
        "stages_ms": {k: round(v, 3) for k, v in stages.items()},
        "scores": score_stats([c.score for c in result.chunks]),
        "notes": list(result.trace.notes),
    }
    if checked is not None:
        record.update(
            confidence=round(checked.confidence, 6),
            weak=checked.weak,
            retried=checked.retried,
            attempts=[a.to_dict() for a in checked.attempts],
        )
    elif context is not None:
        record.update(confidence=round(context.confidence, 6), weak=context.weak_evidence, retried=False)
    if context is not None:
        record["context_tokens"] = context.token_count
        record["citations"] = [
            {"id": s.citation, "chunk_id": s.chunk_id, "ref": s.ref} for s in context.sources
        ]
    return record


class QueryLog:
    """Appends records to a JSONL file; the folder is made on the first append, not before."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._warned = False  # a log that cannot be written is said once, not once per query

    @classmethod
    def in_dir(cls, logs_dir: Path) -> QueryLog:
        """The query log of a data dir (``paths.logs_path``)."""
        return cls(Path(logs_dir) / LOG_NAME)

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record; a write that fails (``OSError``) is a warning on stderr, once."""
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()
        try:
            self._write(line)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                reason = exc.strerror or str(exc)
                print(
                    f"hybrid-rag: warning: the query log {self.path} cannot be written ({reason}); "
                    "queries still answer, unlogged",
                    file=sys.stderr,
                )

    def _write(self, line: bytes) -> None:
        from hybrid_rag.private_files import private_dir

        private_dir(self.path.parent)  # 0700, as the rest of the data dir
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # private, as the index files
        try:
            written = os.write(fd, line)
            while written < len(line):  # a regular file takes it whole; this only guards odd file systems
                written += os.write(fd, line[written:])
        finally:
            os.close(fd)

    def summarize(self) -> dict[str, Any]:
        return summarize(self.path)


def _percentiles(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": round(float(np.percentile(arr, 50)), 3), "p95": round(float(np.percentile(arr, 95)), 3)}


def summarize(path: Path) -> dict[str, Any]:
    """p50/p95 latency (ms) per stage; of the self-checked queries, how many (and what share)
    were retried or stayed weak; the median confidence; how many lines were corrupt. A missing
    log is zero queries."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    corrupt = 0
    if path.exists():
        with path.open("rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    corrupt += 1
                    continue
                if isinstance(record, dict) and isinstance(record.get("stages_ms", {}), dict):
                    records.append(record)
                else:
                    corrupt += 1
    stages: dict[str, list[float]] = {}
    for r in records:
        for stage, ms in r.get("stages_ms", {}).items():
            if isinstance(ms, (int, float)) and math.isfinite(ms):
                stages.setdefault(stage, []).append(float(ms))
    checked = [r for r in records if "attempts" in r]
    retried = sum(1 for r in checked if r.get("retried"))
    weak = sum(1 for r in checked if r.get("weak"))
    confidences = [r["confidence"] for r in records if isinstance(r.get("confidence"), (int, float))]
    return {
        "path": str(path),
        "queries": len(records),
        "corrupt_lines": corrupt,
        "latency_ms": {stage: _percentiles(v) for stage, v in sorted(stages.items())},
        "self_checked": len(checked),
        "retried": retried,
        "weak": weak,
        "retried_share": round(retried / len(checked), 6) if checked else 0.0,
        "weak_share": round(weak / len(checked), 6) if checked else 0.0,
        "confidence_p50": round(float(np.median(confidences)), 6) if confidences else None,
    }
