"""Which products of MiniLM's int8 graph lose the quality, and the graph that keeps them fp32
(``embedding.quantize: int8-mixed``): agreement by layer and part, speed, dense nDCG@10.

Agreement: the cosine of each text's vector to its fp32 one (``--texts`` passages of cosqa and of
cranfield and half as many of their queries), for the graph quantised whole, quantised in one
layer only, in one part only (``onnx_graph.INT8_PARTS``: the fused QKV attention, the attention
output, the FFN input, the FFN output, in every layer), and the mixed graph. Speed: passages a
second of ``embed_passages`` on the first ``--passages`` cranfield abstracts, 1 and 2 threads,
best of two after a warm-up, the graphs alternated. Quality: the dense stage alone (``hybrid-rag
eval --mode dense``) on each dataset, one store per graph, nDCG@10 and MRR@10 with ranx's paired
t-test against fp32.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run int8_layers
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
WORK = ROOT / "benchmarks" / "work" / "int8_layers"
GRAPHS = ("none", "int8", "int8-mixed")
LAYERS = 6
PARTS = ("qkv", "attn_out", "ffn_in", "ffn_out")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--texts", type=int, default=80)
    p.add_argument("--passages", type=int, default=96)
    p.add_argument("--datasets", nargs="*", default=["cosqa", "cranfield"])
    p.add_argument("--parts", nargs="*", default=["quality", "speed", "agreement"])
    p.add_argument("--graphs", nargs="*", default=list(GRAPHS), help="the graphs whose quality is measured")
    p.add_argument("--keep", default="ffn_out", help="--parts keep: the products int8-mixed keeps fp32")
    p.add_argument("--work", default=str(WORK))
    p.add_argument("--per-column", action="store_true", help="agreement: per-column, SmoothQuant")


def _log(*args: Any) -> None:
    print("[int8_layers]", *args, file=sys.stderr, flush=True)


def _texts(name: str, n: int) -> list[str]:
    rows = [json.loads(line) for line in (DATASETS / name / "corpus.jsonl").open()][:n]
    queries = [json.loads(line)["text"] for line in (DATASETS / name / "queries.jsonl").open()][: n // 2]
    return [f"{r.get('title', '')}\n\n{r['text']}".strip() for r in rows] + queries


def agreement(n: int, per_column: bool = False) -> list[dict[str, Any]]:
    from hybrid_rag.models.embedders import canonical_model_name
    from hybrid_rag.models.onnx_graph import cached_bert_onnx, cached_int8_onnx
    from hybrid_rag.models.onnx_runtime import OnnxModel, embedder_files
    from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL

    texts = _texts("cosqa", n) + _texts("cranfield", n)
    files = embedder_files(canonical_model_name(DEFAULT_EMBEDDING_MODEL))
    assert files is not None
    fp32 = cached_bert_onnx(files.directory, files.model_id.replace("/", "--"))

    def embed(path: Path) -> Any:
        return OnnxModel(replace(files, onnx=path), threads=2).embed(texts, 32)

    base = embed(fp32)
    layers = [str(i) for i in range(LAYERS)]
    configs: list[tuple[str, frozenset[str]]] = [("every product int8", frozenset())]
    configs += [(f"only layer {i} int8", frozenset(set(layers) - {i})) for i in layers]
    configs += [(f"only {p} int8 (every layer)", frozenset(set(PARTS) - {p})) for p in PARTS]
    configs += [(f"all but {p} int8", frozenset({p})) for p in PARTS]
    configs += [("all but ffn_out and layer 0 int8", frozenset({"ffn_out", "0"}))]
    if per_column:  # beside the whole int8 graph and int8-mixed's only
        configs = [configs[0], configs[-1]]
    graphs = [(label, lambda keep=keep: cached_int8_onnx(fp32, keep)) for label, keep in configs]
    graphs += per_column_graphs(fp32, files.tokenizer, files.max_length) if per_column else []
    rows = []
    for label, build in graphs:
        cosines = (embed(build()) * base).sum(axis=1)
        rows.append({"graph": label, "mean": float(cosines.mean()), "min": float(cosines.min())})
        _log("agreement", rows[-1])
    return rows


def per_column_graphs(fp32: Path, tokenizer: Path, max_length: int) -> list[tuple[str, Any]]:
    """The per-column int8 graphs (``embedding.quantize: int8-smooth`` and what led to it), each
    as (label, a function that builds it): every product int8 with a weight scale per column
    (8-bit, 7-bit), then SmoothQuant before it at several alphas, its maxima read from the
    packaged texts alone or with the random sequences (RESULTS.md#minilm-int8-smooth)."""
    import tempfile

    import onnx

    from hybrid_rag.models import smooth_quant
    from hybrid_rag.models.onnx_graph import cached_int8_onnx
    from hybrid_rag.models.onnx_runtime import padded_feed

    folder = Path(tempfile.mkdtemp(prefix="int8-smooth-"))

    def smoothed(alpha: float, random_sequences: int) -> Path:
        target = folder / f"a{alpha:g}-r{random_sequences}" / "model.onnx"
        if not target.is_file():
            target.parent.mkdir(parents=True)
            model = onnx.load(str(fp32))
            texts = smooth_quant.calibration_texts()
            maxima = smooth_quant.input_maxima(
                model, tokenizer, max_length, texts, padded_feed, random_sequences
            )
            onnx.save(smooth_quant.smoothed(model, maxima, alpha), str(target))
        return cached_int8_onnx(target, per_channel=True, reduce_range=True)

    rows: list[tuple[str, Any]] = [
        ("every product int8, a scale per column", lambda: cached_int8_onnx(fp32, per_channel=True)),
        (
            "every product int8, a scale per column, 7-bit",
            lambda: cached_int8_onnx(fp32, per_channel=True, reduce_range=True),
        ),
    ]
    for alpha in (0.5, 0.75, 0.9):
        label = f"SmoothQuant alpha {alpha:g}, texts alone, then per column 7-bit"
        rows.append((label, lambda a=alpha: smoothed(a, 0)))
    for alpha in (0.5, 0.7, 0.75, 0.8):
        rows.append(
            (
                f"SmoothQuant alpha {alpha:g}, texts and random sequences, then per column 7-bit",
                lambda a=alpha: smoothed(a, smooth_quant.RANDOM_SEQUENCES),
            )
        )
    return rows


def speed(passages: int) -> dict[str, Any]:
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import EmbeddingSettings

    texts = [json.loads(line)["text"] for line in (DATASETS / "cranfield" / "corpus.jsonl").open()][:passages]
    out: dict[str, Any] = {"passages": len(texts)}
    return passage_rates(
        lambda threads: {g: make_embedder(EmbeddingSettings(quantize=g, threads=threads)) for g in GRAPHS},
        texts,
        warm=8,
        out=out,
        log=_log,
    )


def passage_rates(
    embedders_at: Any, texts: list[str], *, warm: int, out: dict[str, Any], log: Any
) -> dict[str, Any]:
    """Passages a second of each of ``embedders_at(threads)`` (label -> embedder) at 1 and 2
    threads: each warmed on ``warm`` texts (the model loaded, a graph built once), then timed on
    ``texts`` twice, alternated, the best kept; into ``out`` as ``"<label> x<threads>"``."""
    for threads in (1, 2):
        embedders = embedders_at(threads)
        for embedder in embedders.values():
            embedder.embed_passages(texts[:warm])
        best: dict[str, list[float]] = {label: [] for label in embedders}
        for _ in range(2):
            for label, embedder in embedders.items():
                t = time.perf_counter()
                embedder.embed_passages(texts)
                best[label].append(time.perf_counter() - t)
        for label in embedders:
            out[f"{label} x{threads}"] = round(len(texts) / min(best[label]), 2)
        log("speed", out)
    return out


def quality(name: str, work: Path, graphs: list[str], mode: str = "dense") -> dict[str, Any]:
    """``mode`` dense: each graph's store ingested afresh; hybrid (the default pipeline): the
    stores the dense part left in ``work`` queried again, nothing ingested."""
    from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
    from hybrid_rag.evaluation.metrics import compare, load_beir
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import load_settings
    from studies import suite

    dataset = load_beir(DATASETS / name)
    reports, row = {}, {}
    for graph in graphs:
        settings = load_settings(None).with_overrides({"embedding.quantize": graph})
        folder = work / f"{name}-{graph}"
        if mode == "dense":
            shutil.rmtree(folder, ignore_errors=True)
        engine, _ = suite.open_engine(settings, folder, make_embedder(settings.embedding))
        try:
            seconds = ingest_dataset(engine, dataset) if mode == "dense" else 0.0
            result = evaluate_engine(engine, dataset, mode=mode, ingest_seconds=seconds)
        finally:
            engine.close()
        reports[graph] = result.report
        row[graph] = {m: round(result.report.means[m], 4) for m in ("ndcg@10", "mrr@10")}
        row[graph]["ingest_s"] = round(seconds, 1)
        _log(name, mode, graph, row[graph])
    for graph in graphs[1:]:
        tests = compare(reports["none"], reports[graph])
        row[f"p {graph}"] = {m: round(tests[m].p_value, 4) for m in ("ndcg@10", "mrr@10")}
    row["queries"] = len(reports["none"].query_ids)
    return row


def keep(name: str, work: Path, kept: frozenset[str]) -> dict[str, Any]:
    """int8-mixed with ``kept`` products fp32: its store ingested afresh, dense and hybrid nDCG@10
    against the fp32 store the quality part left in ``work`` (queried again, not re-ingested)."""
    from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
    from hybrid_rag.evaluation.metrics import compare, load_beir
    from hybrid_rag.models import factory
    from hybrid_rag.settings import load_settings
    from studies import suite

    dataset = load_beir(DATASETS / name)
    factory.MIXED_KEEP_FP32 = kept
    row: dict[str, Any] = {"keep": sorted(kept), "queries": len(dataset.qrels)}
    reports: dict[str, dict[str, Any]] = {}
    for graph, folder in (
        ("none", work / f"{name}-none"),
        ("int8-mixed", work / f"{name}-keep-{'-'.join(sorted(kept))}"),
    ):
        settings = load_settings(None).with_overrides({"embedding.quantize": graph})
        if graph != "none":
            shutil.rmtree(folder, ignore_errors=True)
        engine, _ = suite.open_engine(settings, folder, factory.make_embedder(settings.embedding))
        try:
            if graph != "none":
                ingest_dataset(engine, dataset)
            reports[graph] = {m: evaluate_engine(engine, dataset, mode=m).report for m in ("dense", "hybrid")}
        finally:
            engine.close()
    for mode in ("dense", "hybrid"):
        before, after = reports["none"][mode], reports["int8-mixed"][mode]
        row[mode] = {
            "fp32": round(before.means["ndcg@10"], 4),
            "mixed": round(after.means["ndcg@10"], 4),
            "p": round(compare(before, after)["ndcg@10"].p_value, 4),
        }
    _log(name, "keep", row)
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_rag.models import factory

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    factory.MIXED_KEEP_FP32 = frozenset(args.keep.split(","))  # what int8-mixed means in this run
    result: dict[str, Any] = {"int8_mixed_keeps": sorted(factory.MIXED_KEEP_FP32)}
    if "quality" in args.parts:
        result["quality"] = {name: quality(name, work, args.graphs) for name in args.datasets}
    if "hybrid" in args.parts:
        result["hybrid"] = {name: quality(name, work, args.graphs, "hybrid") for name in args.datasets}
    if "keep" in args.parts:
        kept = frozenset(args.keep.split(","))
        result["keep"] = {name: keep(name, work, kept) for name in args.datasets}
    if "speed" in args.parts:
        result["speed"] = speed(args.passages)
    if "agreement" in args.parts:
        result["agreement"] = {"texts": 3 * args.texts, "rows": agreement(args.texts, args.per_column)}
    return result


def render(result: dict[str, Any]) -> str:
    kept = ", ".join(result.get("int8_mixed_keeps", ["ffn_out"]))
    lines: list[str] = [f"int8-mixed in this run: every product int8 but {kept} (kept fp32).", ""]
    for part, stage in (("quality", "dense"), ("hybrid", "hybrid (the default pipeline)")):
        if part not in result:
            continue
        graphs = [g for g in GRAPHS if g in next(iter(result[part].values()))]
        names = " / ".join(g if g != "none" else "fp32" for g in graphs)
        lines += [f"| dataset | queries | {stage} nDCG@10: {names} | MRR@10 | p (nDCG) against fp32 |"]
        lines.append("|---|---:|---|---|---|")
        for name, row in result[part].items():
            ndcg = " / ".join(f"{row[g]['ndcg@10']:.4f}" for g in graphs)
            mrr = " / ".join(f"{row[g]['mrr@10']:.4f}" for g in graphs)
            p = " / ".join(f"{row[f'p {g}']['ndcg@10']:.3f}" for g in graphs[1:])
            lines.append(f"| {name} | {row['queries']} | {ndcg} | {mrr} | {p} |")
        lines.append("")
    if "keep" in result:
        kept = ", ".join(next(iter(result["keep"].values()))["keep"])
        lines += [f"int8-mixed keeping {kept} in fp32, nDCG@10 against fp32 (p):", ""]
        lines += ["| dataset | queries | dense | hybrid (the default pipeline) |", "|---|---:|---|---|"]
        for name, row in result["keep"].items():
            cells = [
                f"{row[m]['fp32']:.4f} → {row[m]['mixed']:.4f} ({row[m]['p']:.3f})"
                for m in ("dense", "hybrid")
            ]
            lines.append(f"| {name} | {row['queries']} | {cells[0]} | {cells[1]} |")
        lines.append("")
    if "keep_speed" in result:
        n = result["keep_speed"]["passages"]
        title = f"The same, passages/s on {n} cranfield abstracts, another run (graphs alternated):"
        lines += _speed_table(result["keep_speed"], title)
    if "speed" in result:
        n = result["speed"]["passages"]
        lines += _speed_table(
            result["speed"], f"Passages/s on {n} cranfield abstracts (best of 2, graphs alternated):"
        )
    if "agreement" in result:
        a = result["agreement"]
        lines += [
            f"Cosine of each vector to its fp32 one ({a['texts']} cosqa and cranfield passages and queries):",
            "",
        ]
        lines += ["| graph | mean | min |", "|---|---:|---:|"]
        lines += [f"| {r['graph']} | {r['mean']:.4f} | {r['min']:.4f} |" for r in a["rows"]]
    return "\n".join(lines).rstrip()


def _speed_table(s: dict[str, Any], title: str) -> list[str]:
    """A speed run's passages/s by graph and thread count, under ``title``."""
    rows = [f"| {g} | {s[f'{g} x1']} | {s[f'{g} x2']} |" for g in GRAPHS]
    return [title, "", "| graph | 1 thread | 2 threads |", "|---|---:|---:|", *rows, ""]
