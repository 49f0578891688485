"""Where a query's time goes on a small index: each stage of the trace, before and after a change.

xquad_en's 120 paragraphs ingested with multilingual-e5-small (``configs/multilingual.yaml``;
vectors memoised by the ``expansion_languages`` study, embedded here when absent), then
``--queries`` judged questions (spread evenly) through ``Engine.query`` in five configurations.
Each stage's p50 from the trace (``retrieval/retriever.py``'s Tracer), the trace's sum, the
wall time of the call and what lies outside the stages (the call's own work: the ingested root,
the query's language, materialising, matching lines). The query embedding is a memo lookup
here: the e5 model's own cost is measured beside it, and fastText's detection of a question.

The code measured is the working tree's (``after``) and, with ``--baseline DIR`` (a ``git
archive`` of an earlier commit), that commit's (``before``), each in its own process, alternated
``--rounds`` times so that both see the same load.

    git archive fc4185f hybrid_rag | tar -x -C /tmp/base
    nice -n 10 .venv/bin/python benchmarks/harness.py run query_stages --baseline /tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from studies.languages import DATASETS, ROOT, log

WORK = ROOT / "benchmarks" / "work" / "expansion_languages"  # the vectors that study memoised

_WORKER = r"""
import hashlib, json, os, statistics, sys, tempfile, time
code, bench, datasets, work, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
sys.path[:0] = [code, bench]
import hybrid_rag
assert hybrid_rag.__file__.startswith(code), hybrid_rag.__file__
from pathlib import Path
from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import ingest_dataset
from hybrid_rag.evaluation.metrics import load_beir
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import Settings
from studies.languages import MemoEmbedder, spread
from studies._suite_configs import OPTIONAL_STAGES_OFF
E5 = "multilingual-e5-small"
ds = load_beir(Path(datasets) / "xquad_en")
questions = [ds.queries[q] for q in spread(list(ds.qrels), n)]  # those the expansion study embedded
tag = hashlib.sha1(f"xquad_en/{E5}".encode()).hexdigest()[:8]
inner = make_embedder(Settings().embedding.model_copy(update={"model": E5, "threads": 1}))
memo = MemoEmbedder(inner, Path(work) / f"vectors-{tag}-{os.getpid()}.npz")
configs = {
    "hybrid, default": ("hybrid", {}),
    "hybrid, no expansion": ("hybrid", {"expansion": False}),
    "bm25, default": ("bm25", {}),
    "bm25, optional stages off": ("bm25", OPTIONAL_STAGES_OFF),
    "dense, optional stages off": ("dense", OPTIONAL_STAGES_OFF),
}
out = {}
with tempfile.TemporaryDirectory() as tmp:
    engine = Engine(Settings().with_overrides({"paths.data_dir": tmp, "embedding.model": E5}), embedder=memo)
    ingest_dataset(engine, ds)
    memo.embed_queries(questions)
    memo.save()
    for name, (mode, features) in configs.items():
        for q in questions[:10]:
            engine.query(q, mode=mode, features=features)
        stages, walls, traces = {}, [], []
        for q in questions:
            t = time.perf_counter()
            r = engine.query(q, mode=mode, features=features)
            walls.append(time.perf_counter() - t)
            traces.append(r.trace.total_seconds)
            seen = {}
            for s in r.trace.timings:
                seen[s.stage] = seen.get(s.stage, 0.0) + s.seconds
            for k, v in seen.items():
                stages.setdefault(k, []).append(v)
        ms = lambda v: round(1000 * statistics.median(v), 2)
        out[name] = {
            "wall": ms(walls),
            "trace": ms(traces),
            "outside": ms([w - t for w, t in zip(walls, traces)]),
            "stages": {k: ms(v) for k, v in stages.items()},
        }
    engine.close()
if len(sys.argv) > 6:
    from hybrid_rag.lang.detect import detect_language
    detect_language("warm up")
    lat = []
    for q in questions:
        t = time.perf_counter(); detect_language(q); lat.append(time.perf_counter() - t)
    out["detect_language"] = round(1000 * statistics.median(lat), 3)
    inner.embed_queries(questions[:3])
    lat = []
    for q in questions[:40]:
        t = time.perf_counter(); inner.embed_queries([q]); lat.append(time.perf_counter() - t)
    out["embed_query_e5"] = round(1000 * statistics.median(lat), 2)
print(json.dumps(out))
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder holding xquad_en/ (%(default)s)")
    p.add_argument("--baseline", default=None, help="a folder holding an earlier commit's hybrid_rag/")
    p.add_argument("--queries", type=int, default=100, help="judged questions, spread (%(default)s)")
    p.add_argument("--rounds", type=int, default=2, help="before/after alternations (%(default)s)")
    p.add_argument("--work", default=str(WORK), help="memoised vectors (%(default)s)")


def _worker(code: Path, args: argparse.Namespace, extras: bool) -> dict[str, Any]:
    argv = [sys.executable, "-c", _WORKER, str(code), str(ROOT / "benchmarks"), args.datasets, args.work]
    argv += [str(args.queries)] + (["extras"] if extras else [])
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per configuration and figure, the median over the rounds."""
    out: dict[str, Any] = {}
    for name in runs[0]:
        if not isinstance(runs[0][name], dict):
            out[name] = statistics.median(r[name] for r in runs if name in r)
            continue
        row = runs[0][name]
        out[name] = {k: statistics.median(r[name][k] for r in runs) for k in ("wall", "trace", "outside")}
        stages = sorted({s for r in runs for s in r[name]["stages"]})
        out[name]["stages"] = {
            s: statistics.median(r[name]["stages"].get(s, 0.0) for r in runs)
            for s in stages
            if s in row["stages"]
        }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"queries": args.queries, "rounds": args.rounds, "load": []}
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    for i in range(args.rounds):
        result["load"].append(os.getloadavg()[0])
        if args.baseline:
            log(f"round {i + 1}: before ({args.baseline})")
            before.append(_worker(Path(args.baseline), args, extras=False))
        log(f"round {i + 1}: after")
        after.append(_worker(ROOT, args, extras=i == 0))
    result["load"].append(os.getloadavg()[0])
    result["after"] = _median_of(after)
    if before:
        result["before"] = _median_of(before)
    return result


def render(result: Mapping[str, Any]) -> str:
    after, before = result["after"], result.get("before")
    names = [k for k, v in after.items() if isinstance(v, dict)]
    lines = [
        "| configuration | stage | " + ("before ms | " if before else "") + "after ms |",
        "|---|---|" + ("---|" if before else "") + "---|",
    ]
    for name in names:
        a, b = after[name], (before or {}).get(name)
        stages = list(a["stages"]) + [s for s in (b or {}).get("stages", {}) if s not in a["stages"]]
        rows = [(s, (b or {}).get("stages", {}).get(s), a["stages"].get(s)) for s in stages]
        rows += [(f"*{k}*", (b or {}).get(k), a[k]) for k in ("outside", "trace", "wall")]
        for stage, was, now in rows:
            cells = ([f"{was:.2f}" if was is not None else "–"] if before else []) + [
                f"{now:.2f}" if now is not None else "–"
            ]
            lines.append(f"| {name} | {stage} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"p50 over {result['queries']} xquad_en questions, median of {result['rounds']} rounds; the query "
        f"embedding is a memo lookup here: multilingual-e5-small's own p50 is "
        f"{after.get('embed_query_e5')} ms "
        f"(1 thread), fastText's detection of a question {after.get('detect_language')} ms. Load average "
        + ", ".join(f"{x:.1f}" for x in result["load"])
        + " (2 cores shared by parallel sessions: read the figures as ratios).",
    ]
    return "\n".join(lines)
