"""The levers on a hybrid index build's time, each measured alone and together: the int8-mixed
graph, the windows' overlap and length, the threads (issue 39, the Django target).

Parts (``--parts``):

* ``windows``: a tree (``--tree``, default a 1/8 sample of Django 5.0.6's sdist) chunked as ingest
  chunks it (fake embedder: chunking does not depend on the model), its distinct chunk texts cut
  into windows by the real embedder with the session replaced by a recorder (embedding_cost.py's):
  windows, word pieces fed and GFLOP for each window overlap and window length, nothing run;
* ``speed``: chunks a second of ``embed_passages`` on ``--sample`` of those texts (drawn evenly),
  for each ``--arm`` at 1 and 2 threads, best of two after a warm-up, the arms alternated;
* ``quality``: each ``--arm``'s store of each ``--datasets`` ingested afresh, nDCG@10 dense alone
  and hybrid (the default pipeline), paired t-test against the first arm;
* ``django``: the whole hybrid index of ``--tree`` (``hybrid-rag ingest``, a fresh data dir, the
  default model) for each ``--arm``, ``--rounds`` times alternated: wall, the child's CPU seconds
  (user + sys: how many cores it kept busy), chunks a second.

An arm is ``label:key=value,...`` (settings keys, values read as YAML); ``base:`` is the
defaults (name ``embedding.quantize=none`` for fp32: the default is ``auto``, int8-mixed on a fresh
data dir). A sample of a tree: every Nth file of its sorted listing copied with its folders (the
runs of RESULTS.md#ingest-levers: N = 8 for ``windows``, 32 for ``django``).

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run ingest_levers \\
        --tree /tmp/dj8/Django-5.0.6 --parts windows speed
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
WORK = ROOT / "benchmarks" / "work" / "ingest_levers"
ARMS = ("base:", "i8:embedding.quantize=int8-mixed")
OVERLAPS = (32, 16, 0)
LENGTHS = (256, 128)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tree", default="/tmp/dj8/Django-5.0.6")
    p.add_argument("--parts", nargs="*", default=["windows", "speed"])
    p.add_argument("--arm", action="append", default=[], metavar="LABEL:KEY=VALUE,...")
    p.add_argument("--sample", type=int, default=48)
    p.add_argument("--lengths", type=int, nargs="*", default=list(LENGTHS), help="window lengths (pieces)")
    p.add_argument("--overlaps", type=int, nargs="*", default=list(OVERLAPS))
    p.add_argument("--datasets", nargs="*", default=["cranfield", "cosqa"])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--work", default=str(WORK))


def _log(*args: Any) -> None:
    print("[ingest_levers]", *args, file=sys.stderr, flush=True)


def parse_arm(text: str) -> tuple[str, dict[str, Any]]:
    label, sep, body = text.partition(":")
    if not sep or not label.strip():
        raise SystemExit(f"--arm {text!r}: expected label:key=value,...")
    overrides = {}
    for item in filter(None, (i.strip() for i in re.split(r",(?![^\[]*\])", body))):  # a [list, of] values
        key, eq, raw = item.partition("=")
        if not eq:
            raise SystemExit(f"--arm {text!r}: {item!r} is not key=value")
        overrides[key.strip()] = yaml.safe_load(raw)
    return label.strip(), overrides


def _embedding(overrides: dict[str, Any], threads: int | None = None) -> Any:
    from hybrid_rag.settings import load_settings

    settings = load_settings(None).with_overrides(overrides).embedding
    return settings.model_copy(update={"threads": threads}) if threads else settings


def windows(texts: list[str], lengths: list[int], overlaps: list[int]) -> list[dict[str, Any]]:
    """Windows, word pieces and GFLOP of ``texts`` for each overlap and window length (recorded)."""
    from hybrid_rag.models.factory import make_embedder
    from studies.embedding_cost import _Recorder, flops, graph_shape

    shape = graph_shape()
    rows = []
    for length in lengths:
        for overlap in overlaps:
            embedder = make_embedder(_embedding({"embedding.window_overlap_tokens": overlap}, 1))
            embedder = getattr(embedder, "inner", embedder)  # auto's chosen model (MiniLM)
            model = embedder.model  # type: ignore[attr-defined]
            real, recorder = model._session, _Recorder(shape["hidden"])
            model._session = recorder
            kind = type(embedder)
            was = kind.__dict__.get("max_seq_length")
            kind.max_seq_length = property(lambda _self, n=length: n)  # type: ignore[attr-defined]
            try:
                for start in range(0, len(texts), 256):
                    embedder.embed_passage_windows(texts[start : start + 256])  # type: ignore[attr-defined]
            finally:
                if was is not None:
                    kind.max_seq_length = was  # type: ignore[attr-defined]
                model._session = real
            b = recorder.batches
            row = {
                "length": length,
                "overlap": overlap,
                "chunks": len(texts),
                "windows": sum(r for r, _, _ in b),
                "tokens": sum(t for _, _, t in b),
                "gflop": round(sum(r * flops(w, shape) for r, w, _ in b) / 1e9, 1),
            }
            rows.append(row)
            _log("windows", row)
    return rows


def speed(texts: list[str], arms: list[tuple[str, dict[str, Any]]], sample: int) -> dict[str, Any]:
    from hybrid_rag.models.factory import make_embedder
    from studies.int8_layers import passage_rates

    step = max(1, len(texts) // sample)
    picked = texts[::step][:sample]
    out: dict[str, Any] = {"chunks": len(picked), "load": [round(os.getloadavg()[0], 2)]}
    passage_rates(
        lambda threads: {label: make_embedder(_embedding(o, threads)) for label, o in arms},
        picked,
        warm=4,
        out=out,
        log=_log,
    )
    out["load"].append(round(os.getloadavg()[0], 2))
    return out


def quality(name: str, arms: list[tuple[str, dict[str, Any]]], work: Path) -> dict[str, Any]:
    from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
    from hybrid_rag.evaluation.metrics import compare, load_beir
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import load_settings
    from studies import suite

    dataset = load_beir(DATASETS / name)
    reports: dict[str, dict[str, Any]] = {}
    row: dict[str, Any] = {"queries": len(dataset.qrels)}
    for label, overrides in arms:
        settings = load_settings(None).with_overrides(overrides)
        folder = work / f"{name}-{label}"
        shutil.rmtree(folder, ignore_errors=True)
        engine, _ = suite.open_engine(settings, folder, make_embedder(settings.embedding))
        try:
            seconds = ingest_dataset(engine, dataset)
            reports[label] = {m: evaluate_engine(engine, dataset, mode=m).report for m in ("dense", "hybrid")}
        finally:
            engine.close()
        row[label] = {m: round(r.means["ndcg@10"], 4) for m, r in reports[label].items()}
        row[label]["ingest_s"] = round(seconds, 1)
        _log(name, label, row[label])
    first = arms[0][0]
    for label, _ in arms[1:]:
        row[f"p {label}"] = {
            m: round(compare(reports[first][m], reports[label][m])["ndcg@10"].p_value, 4)
            for m in ("dense", "hybrid")
        }
    return row


def django(
    tree: Path, arms: list[tuple[str, dict[str, Any]]], rounds: int, work: Path
) -> list[dict[str, Any]]:
    """The tree's whole hybrid index, one fresh data dir per arm and round, arms alternated."""
    rows = []
    exe = Path(sys.executable).with_name("hybrid-rag")
    for r in range(rounds):
        for label, overrides in arms:
            data = work / f"django-{label}"
            shutil.rmtree(data, ignore_errors=True)
            env = dict(os.environ, HF_HUB_OFFLINE="1")
            for key, value in overrides.items():
                env["HYBRID_RAG_" + key.upper().replace(".", "__")] = (
                    value if isinstance(value, str) else json.dumps(value)
                )
            before, load = resource.getrusage(resource.RUSAGE_CHILDREN), os.getloadavg()[0]
            t = time.perf_counter()
            done = subprocess.run(
                [str(exe), "--data-dir", str(data), "ingest", str(tree), "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            wall = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            report = json.loads(done.stdout)
            chunks = report.get("chunks") or report.get("embedded") or 0
            row = {
                "round": r + 1,
                "arm": label,
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "cores_busy": round(cpu / wall, 2),
                "chunks": chunks,
                "embedded": report.get("embedded"),
                "chunks_s": round(chunks / wall, 2) if chunks else None,
                "load": [round(load, 2), round(os.getloadavg()[0], 2)],
                "stages": report.get("stages") or report.get("timings"),
            }
            rows.append(row)
            _log("django", row)
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    from studies.embedding_cost import chunk_texts

    arms = [parse_arm(a) for a in (args.arm or ARMS)]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"tree": args.tree, "arms": {label: o for label, o in arms}}
    if {"windows", "speed"} & set(args.parts):
        with tempfile.TemporaryDirectory(prefix="ingest-levers-") as tmp:
            texts = chunk_texts("tree", Path(args.tree), Path(tmp))
        _log("texts", len(texts))
        if "windows" in args.parts:
            result["windows"] = windows(texts, args.lengths, args.overlaps)
        if "speed" in args.parts:
            result["speed"] = speed(texts, arms, args.sample)
    if "quality" in args.parts:
        result["quality"] = {name: quality(name, arms, work) for name in args.datasets}
    if "django" in args.parts:
        result["django"] = django(Path(args.tree), arms, args.rounds, work)
    return result


def render(result: dict[str, Any]) -> str:
    lines: list[str] = []
    if "windows" in result:
        lines += [
            f"Windows of {result.get('windows_tree') or Path(result['tree']).name}'s chunks "
            "(recorded, not run):",
            "",
            "| window (pieces) | overlap | chunks | windows | word pieces fed | GFLOP |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['length']} | {r['overlap']} | {r['chunks']:,} | {r['windows']:,} | "
            f"{r['tokens']:,} | {r['gflop']:,} |"
            for r in result["windows"]
        ]
        lines.append("")
    if "speed" in result:
        s = result["speed"]
        labels = [k.rsplit(" ", 1)[0] for k in s if k.endswith(" x1")]
        lines += [
            f"Chunks/s, {s['chunks']} of the sample's chunks, drawn evenly (best of two, arms "
            f"alternated; load {s['load']}):",
            "",
            "| arm | 1 thread | 2 threads |",
            "|---|---:|---:|",
        ]
        lines += [f"| {label} | {s[label + ' x1']} | {s[label + ' x2']} |" for label in labels]
        lines.append("")
    for name, row in result.get("quality", {}).items():
        labels = [k for k in row if isinstance(row[k], dict) and not k.startswith("p ")]
        lines += [f"{name} ({row['queries']} queries), nDCG@10 (p against {labels[0]}):", ""]
        lines += ["| arm | dense | hybrid |", "|---|---|---|"]
        for label in labels:
            p = row.get(f"p {label}", {})
            cells = [f"{row[label][m]}" + (f" (p {p[m]})" if p else "") for m in ("dense", "hybrid")]
            lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
        lines.append("")
    if "django" in result:
        lines += [
            "| round | arm | wall s | CPU s | cores busy | chunks | chunks/s | load |",
            "|---:|---|---:|---:|---:|---:|---:|---|",
        ]
        lines += [
            f"| {r['round']} | {r['arm']} | {r['wall_s']} | {r['cpu_s']} | {r['cores_busy']} | "
            f"{r['chunks']} | {r['chunks_s']} | {r['load'][0]}-{r['load'][1]} |"
            for r in result["django"]
        ]
    return "\n".join(lines)
