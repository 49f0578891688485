"""The default embedder's ONNX graph in fp32 against int8 (``embedding.quantize: int8``): speed and
judged quality, in one run on one machine.

Speed: passages a second of ``embed_passages`` on the first ``--passages`` cranfield abstracts,
at 1 and 2 threads, the best of two passes after a warm-up; the same texts for both graphs, so
the ratio holds under load even where the absolute figures do not. Agreement: the cosine of each
passage's int8 vector to its fp32 one. Quality: the default configuration (hybrid, every default
stage) on each dataset named, one store per graph, nDCG@10 and MRR@10 with ranx's paired t-test.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run quantized_embedding --datasets cosqa
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
WORK = ROOT / "benchmarks" / "work" / "quantized_embedding"
GRAPHS = ("none", "int8")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--passages", type=int, default=96)
    p.add_argument("--datasets", nargs="*", default=["cosqa", "cranfield"])
    p.add_argument("--work", default=str(WORK))


def speed(passages: int) -> dict[str, Any]:
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import EmbeddingSettings

    path = DATASETS / "cranfield" / "corpus.jsonl"
    texts = [json.loads(line)["text"] for line in path.open()][:passages]
    out: dict[str, Any] = {"passages": len(texts)}
    vectors = {}
    for threads in (1, 2):
        for graph in GRAPHS:
            embedder = make_embedder(EmbeddingSettings(quantize=graph, threads=threads))
            embedder.embed_passages(texts[:8])
            best = []
            for _ in range(2):
                t = time.perf_counter()
                vectors[graph] = embedder.embed_passages(texts)
                best.append(time.perf_counter() - t)
            out[f"{graph} x{threads}"] = round(len(texts) / min(best), 2)
    cosines = (vectors["none"] * vectors["int8"]).sum(axis=1)
    out["cosine_min"], out["cosine_mean"] = float(cosines.min()), float(cosines.mean())
    return out


def quality(name: str, work: Path) -> dict[str, Any]:
    from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
    from hybrid_rag.evaluation.metrics import compare, load_beir
    from hybrid_rag.settings import load_settings
    from studies import suite

    dataset = load_beir(DATASETS / name)
    reports, row = {}, {}
    for graph in GRAPHS:
        settings = load_settings(None).with_overrides({"embedding.quantize": graph})
        from hybrid_rag.models.factory import make_embedder

        folder = work / f"{name}-{graph}"
        shutil.rmtree(folder, ignore_errors=True)
        engine, _ = suite.open_engine(settings, folder, make_embedder(settings.embedding))
        try:
            seconds = ingest_dataset(engine, dataset)
            result = evaluate_engine(engine, dataset, mode="hybrid", ingest_seconds=seconds)
        finally:
            engine.close()
        reports[graph] = result.report
        row[graph] = {m: round(result.report.means[m], 4) for m in ("ndcg@10", "mrr@10")}
        row[graph]["ingest_s"] = round(seconds, 1)
        print(f"[quantized_embedding] {name} {graph}: {row[graph]}", file=sys.stderr, flush=True)
    tests = compare(reports["none"], reports["int8"])
    row["p"] = {m: round(tests[m].p_value, 4) for m in ("ndcg@10", "mrr@10")}
    row["queries"] = len(reports["none"].query_ids)
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"speed": speed(args.passages)}
    print(f"[quantized_embedding] speed: {result['speed']}", file=sys.stderr, flush=True)
    result["quality"] = {name: quality(name, work) for name in args.datasets}
    return result


def render(result: dict[str, Any]) -> str:
    s = result["speed"]
    lines = [
        f"Speed: passages/s on {s['passages']} cranfield abstracts (best of 2 after a warm-up); "
        f"int8 vectors' cosine to fp32: mean {s['cosine_mean']:.3f}, min {s['cosine_min']:.3f}.",
        "",
        "| graph | 1 thread | 2 threads |",
        "|---|---|---|",
    ]
    for graph in GRAPHS:
        lines.append(f"| {graph} | {s[f'{graph} x1']} | {s[f'{graph} x2']} |")
    lines += ["", "| dataset | queries | nDCG@10 fp32 → int8 (p) | MRR@10 fp32 → int8 (p) |"]
    lines.append("|---|---|---|---|")
    for name, row in result.get("quality", {}).items():
        cells = [
            f"{row['none'][m]:.4f} → {row['int8'][m]:.4f} ({row['p'][m]:.3f})" for m in ("ndcg@10", "mrr@10")
        ]
        lines.append(f"| {name} | {row['queries']} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)
