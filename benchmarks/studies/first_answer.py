"""Time to the first answer: ``hybrid-rag ingest REPO`` started, when does a query first answer,
and when is the hybrid index complete; BM25 first (``ingest.publish_bm25_first``) against the
streaming ingest before it (``--no-bm25-first``), on a real repository.

Each arm runs the real CLI in a child process on a fresh data dir (``--progress``), while this
process watches the index pointer every ``--poll`` seconds; once a version is live it runs
``hybrid-rag query --json`` (a cold CLI, as a user or an agent would) and records when its answer
came back and what the answer said of the dense index (``"dense": "building, 41%"``). "Full" is
the moment the live manifest's dense index holds every chunk (the ingest exits just after).
Peak RSS is the ingest child's ``VmHWM``; its CPU time when the first version went live says what
the wall time would be on an idle machine (that phase runs on one core). With ``--budget`` an arm
is stopped (SIGINT, the CLI's Ctrl-C) that many seconds after the first answer: a BM25-first
timing of a repository too large to embed within the session. Then the finished index's query
latency (in process, top 10, the default features) is timed on both arms' data dirs, which must
hold the same chunks.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run first_answer --repo django
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run first_answer --repo PATH
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work" / "first_answer"
ARMS = {"bm25-first": "--bm25-first", "streaming": "--no-bm25-first"}
QUESTION = "how is a query string parsed into a filter"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", default="django", help="django (5.0.6's sdist, fetched with pip) or a folder")
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    p.add_argument("--budget", type=float, default=None, help="stop an arm this long after its first answer")
    p.add_argument("--poll", type=float, default=0.5)
    p.add_argument("--queries", type=int, default=20, help="timed queries on the finished index")
    p.add_argument("--min-bytes", type=int, default=None, help="ingest.bm25_first_min_bytes for the run")
    p.add_argument("--work", default=str(WORK))


def _repo(args: argparse.Namespace, work: Path) -> Path:
    if args.repo != "django":
        return Path(args.repo).resolve()
    from studies._repo_corpus import Project, fetch

    return fetch(Project("django", "5.0.6"), work / "sdists")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hybrid_rag.cli", *args]


def _env(min_bytes: int | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if min_bytes is not None:
        env["HYBRID_RAG_INGEST__BM25_FIRST_MIN_BYTES"] = str(min_bytes)
    return env


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (the BM25 term workers of ``ingest.tokenize_ahead``)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _cpu_s(pid: int) -> float:
    """The child's CPU time so far (user + system): its wall time on an idle machine, where the
    read-chunk-store phase has a core to itself."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _manifest(data: Path) -> dict[str, Any] | None:
    try:
        version = int((data / "indices" / "CURRENT").read_text().strip())
        return json.loads((data / "indices" / f"v{version:06d}" / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def _dense(manifest: dict[str, Any]) -> int:
    return int(manifest.get("dense_chunks", manifest["chunks"]))


def _first_answer(data: Path, env: dict[str, str], start: float, out: dict[str, Any]) -> None:
    """One cold ``hybrid-rag query --json`` (in a thread: the watch goes on meanwhile)."""
    asked = time.perf_counter()
    done = subprocess.run(
        _cli("--data-dir", str(data), "query", "--json", QUESTION), env=env, capture_output=True, text=True
    )
    out["first_answer_s"] = time.perf_counter() - start
    out["first_query_cold_s"] = time.perf_counter() - asked
    if done.returncode == 0:
        answer = json.loads(done.stdout)
        out["first_answer_results"] = len(answer["results"])
        out["first_answer_dense"] = answer.get("dense", "complete")
    else:
        out["first_answer_error"] = done.stderr.strip()[-300:]


def run_arm(repo: Path, data: Path, flag: str, args: argparse.Namespace) -> dict[str, Any]:
    env = _env(args.min_bytes)
    shutil.rmtree(data, ignore_errors=True)
    start = time.perf_counter()
    log = data.parent / f"{data.name}.log"
    data.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:
        proc = subprocess.Popen(
            _cli("--data-dir", str(data), "ingest", "--progress", flag, str(repo)),
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    row: dict[str, Any] = {}
    asker: threading.Thread | None = None
    hwm = 0
    stopped = False
    workers: dict[int, int] = {}  # child pid -> its peak RSS (kB)
    while proc.poll() is None:
        hwm = max(hwm, _hwm_kb(proc.pid))
        for child in _children(proc.pid):
            workers[child] = max(workers.get(child, 0), _hwm_kb(child))
        manifest = _manifest(data)
        now = time.perf_counter() - start
        if manifest is not None and "first_live_s" not in row:
            row["first_live_s"] = now
            row["first_live_cpu_s"] = _cpu_s(proc.pid)
            row["first_live_dense"] = f"{_dense(manifest)}/{manifest['chunks']}"
            asker = threading.Thread(target=_first_answer, args=(data, env, start, row))
            asker.start()
        if manifest is not None and _dense(manifest) == manifest["chunks"]:
            row.setdefault("full_s", now)
        first = row.get("first_answer_s")
        if args.budget is not None and first is not None and now > first + args.budget and not stopped:
            proc.send_signal(signal.SIGINT)
            stopped = True
        time.sleep(args.poll)
    err = log.read_text()
    row["ingest_s"] = time.perf_counter() - start
    if asker is not None:
        asker.join()
    manifest = _manifest(data)
    if manifest is not None and _dense(manifest) == manifest["chunks"]:
        row.setdefault("full_s", row["ingest_s"])
    row.update(
        exit_code=proc.returncode,
        stopped_by_budget=stopped,
        peak_rss_mb=round(hwm / 1024, 1),
        worker_peak_rss_mb=[round(kb / 1024, 1) for kb in workers.values()],
        chunks=manifest["chunks"] if manifest else 0,
        dense_chunks=_dense(manifest) if manifest else 0,
        stderr_tail=[line for line in err.splitlines() if "searchable" in line or "interrupted" in line][-3:],
    )
    return row


def query_latency(data: Path, count: int) -> dict[str, float]:
    """p50/p95 of ``Engine.query`` (top 10, default features) on a finished data dir, in process."""
    from hybrid_rag.engine import Engine
    from hybrid_rag.settings import load_settings

    engine = Engine(load_settings(None, data_dir=data))
    try:
        chunks = list(engine.store.iter_chunks())
        step = max(1, len(chunks) // (count + 3))
        words = [c.text.split("\n", 1)[0][:80] for c in chunks[::step][: count + 3]]
        for q in words[:3]:
            engine.query(q, top_k=10)
        times = []
        for q in words[3:]:
            t = time.perf_counter()
            engine.query(q, top_k=10)
            times.append(1000 * (time.perf_counter() - t))
    finally:
        engine.close()
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(p95, 1)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work)
    repo = _repo(args, work)
    result: dict[str, Any] = {"repo": str(repo.relative_to(ROOT) if repo.is_relative_to(ROOT) else repo)}
    result["bytes"] = sum(p.stat().st_size for p in repo.rglob("*") if p.is_file())
    result["load_before"] = os.getloadavg()
    arms = {}
    for name in args.arms:
        print(f"[first_answer] {name} ...", file=sys.stderr, flush=True)
        arms[name] = run_arm(repo, work / f"data-{name}", ARMS[name], args)
        print(f"[first_answer] {name}: {arms[name]}", file=sys.stderr, flush=True)
    for name, row in arms.items():
        if row.get("dense_chunks") and row["dense_chunks"] == row["chunks"] and args.queries:
            row["query"] = query_latency(work / f"data-{name}", args.queries)
    result["arms"] = arms
    result["load_after"] = os.getloadavg()
    return result


def _workers(row: dict[str, Any]) -> str:
    peaks = row.get("worker_peak_rss_mb") or []
    return f" (+ its child processes, the largest: {max(peaks)})" if peaks else ""


def _s(value: Any) -> str:
    return f"{value:,.1f}" if isinstance(value, (int, float)) else "–"


def render(result: dict[str, Any]) -> str:
    lines = [
        f"Repository `{result['repo']}` ({result['bytes'] / 1e6:.1f} MB); load average "
        f"{result['load_before'][0]:.1f} before, {result['load_after'][0]:.1f} after (2 cores).",
        "",
        "| arm | first version live (s) | first answer (s) | its `dense` | full hybrid (s) | ingest (s) "
        "| chunks | peak RSS (MB) | query p50 / p95 (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in result["arms"].items():
        q = row.get("query", {})
        latency = f"{q['p50_ms']} / {q['p95_ms']}" if q else "–"
        full = _s(row.get("full_s")) if not row.get("stopped_by_budget") else "stopped"
        lines.append(
            f"| {name} | {_s(row.get('first_live_s'))} | {_s(row.get('first_answer_s'))} "
            f"| {row.get('first_answer_dense', '–')} | {full} | {_s(row['ingest_s'])} | {row['chunks']:,} "
            f"| {row['peak_rss_mb']}{_workers(row)} | {latency} |"
        )
    return "\n".join(lines)
