"""MiniLM's per-chunk cost on ONNX Runtime against what the hardware does: FLOPs per chunk at its
token count (from the graph's own weight shapes), the padding the current batching adds, and the
FLOP rate achieved against a plain matrix product's on the same cores and runtime.

Shapes: each corpus is chunked as ingest chunks it (fake embedder: chunking does not depend on the
model), its distinct chunk texts taken in store order in calls of 256 (``embed_missing``, what an
index build passes the embedder), each call cut into windows by the real embedder and run through
``OnnxModel.run`` with the session replaced by a recorder: every batch's rows, width and real
tokens, exactly as ingest would run them, without running the model. Corpora: cranfield (BEIR
layout, title + text) and this repository's tree (``git archive HEAD``).

Rates: the fp32 graph on the first ``--sample`` cranfield chunks (1 and 2 threads, best of two),
FLOPs counted from the recorded shapes (padding included, so the rate is the hardware's, and
the useful rate apart); against it a [rows x 384] @ [384 x 1536] MatMul alone in ONNX Runtime and
numpy's sgemm at 2048 cubed, each best of five.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run embedding_cost
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
CALL = 256  # texts an index build hands the embedder at once (embedding_cache.embed_missing)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample", type=int, default=96)
    p.add_argument("--repo", default=str(ROOT))


def _log(*args: Any) -> None:
    print("[embedding_cost]", *args, file=sys.stderr, flush=True)


def graph_shape() -> dict[str, int]:
    """Layers, hidden width and FFN width read from the built fp32 graph's weights."""
    import onnx

    from hybrid_rag.models.embedders import canonical_model_name
    from hybrid_rag.models.onnx_graph import cached_bert_onnx
    from hybrid_rag.models.onnx_runtime import embedder_files
    from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL

    files = embedder_files(canonical_model_name(DEFAULT_EMBEDDING_MODEL))
    assert files is not None
    model = onnx.load(str(cached_bert_onnx(files.directory, files.model_id.replace("/", "--"))))
    dims = {i.name: tuple(i.dims) for i in model.graph.initializer}
    layers = sum(1 for n in dims if n.endswith(".qkv.weight_t"))
    hidden, ffn = dims["encoder.layer.0.intermediate.dense.weight_t"]
    return {"layers": layers, "hidden": int(hidden), "ffn": int(ffn)}


def flops(tokens: int, shape: dict[str, int]) -> float:
    """Multiply-adds x 2 of one sequence of ``tokens``: the four products of each layer
    (QKV 3·h², attention output h², FFN 2·h·f per token) and attention's two n² products."""
    h, f = shape["hidden"], shape["ffn"]
    per_layer = 2 * tokens * (4 * h * h + 2 * h * f) + 4 * tokens * tokens * h
    return float(shape["layers"] * per_layer)


class _Recorder:
    """Stands in for the ONNX session: records each batch's shape, returns zeros."""

    def __init__(self, hidden: int) -> None:
        self.hidden = hidden
        self.batches: list[tuple[int, int, int]] = []  # rows, width, real tokens

    def run(self, _outputs: Any, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        mask = feed["attention_mask"]
        self.batches.append((int(mask.shape[0]), int(mask.shape[1]), int(mask.sum())))
        return [np.zeros((*mask.shape, self.hidden), dtype=np.float32)]


def chunk_texts(kind: str, source: Path, work: Path) -> list[str]:
    """The distinct chunk texts of ``source`` in store order, as ingest would embed them."""
    from hybrid_rag.engine import Engine
    from hybrid_rag.evaluation.experiment import ingest_dataset
    from hybrid_rag.evaluation.metrics import load_beir
    from hybrid_rag.settings import Settings

    settings = Settings().with_overrides({"paths.data_dir": str(work), "embedding.model": "fake"})
    engine = Engine(settings)
    try:
        if kind == "beir":
            ingest_dataset(engine, load_beir(source))
        else:
            engine.ingest([source])
        seen: dict[str, str] = {}
        for chunk in engine.store.iter_chunks():
            seen.setdefault(chunk.sha256, chunk.text)
        return list(seen.values())
    finally:
        engine.close()


def batches_of(
    texts: list[str], shape: dict[str, int], threads: int = 1
) -> tuple[list[tuple[int, int, int]], Any]:
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import EmbeddingSettings

    embedder = make_embedder(EmbeddingSettings(threads=threads))
    model = embedder.model  # type: ignore[attr-defined]
    real_session = model._session
    recorder = _Recorder(shape["hidden"])
    model._session = recorder
    for start in range(0, len(texts), CALL):
        embedder.embed_passage_windows(texts[start : start + CALL])  # type: ignore[attr-defined]
    model._session = real_session
    return recorder.batches, embedder


def padding(batches: list[tuple[int, int, int]], shape: dict[str, int]) -> dict[str, Any]:
    padded = sum(rows * width for rows, width, _ in batches)
    real = sum(tokens for _, _, tokens in batches)
    windows = sum(rows for rows, _, _ in batches)
    return {
        "windows": windows,
        "batches": len(batches),
        "tokens": real,
        "padded_tokens": padded,
        "padding_share": round(1 - real / padded, 4),
        "mean_tokens": round(real / windows, 1),
        "full_width_share": round(sum(r for r, w, _ in batches if w >= 256) / windows, 4),
        "gflops_padded": round(sum(r * flops(w, shape) for r, w, _ in batches) / 1e9, 1),
    }


def model_rate(texts: list[str], shape: dict[str, int]) -> dict[str, Any]:
    """The fp32 graph's passages/s and GFLOP/s on ``texts`` (1 and 2 threads, best of two)."""
    out: dict[str, Any] = {"texts": len(texts)}
    for threads in (1, 2):
        batches, embedder = batches_of(texts, shape, threads)
        work = sum(r * flops(w, shape) for r, w, _ in batches)
        useful = sum(flops(t // max(r, 1), shape) * r for r, _, t in batches)  # padding left out (approx.)
        embedder.embed_passages(texts[:8])
        best = min(_timed(lambda e=embedder: e.embed_passages(texts)) for _ in range(2))
        out[f"x{threads}"] = {
            "passages_s": round(len(texts) / best, 2),
            "gflop_s": round(work / best / 1e9, 2),
            "useful_gflop_s": round(useful / best / 1e9, 2),
        }
        _log("model", threads, out[f"x{threads}"])
    return out


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def matmul_rates(shape: dict[str, int]) -> dict[str, Any]:
    """GFLOP/s of a lone MatMul in ONNX Runtime (rows x h @ h x f, the FFN input's shape at a
    batch of 32 x 128 tokens) and of numpy's sgemm at 2048 cubed, 1 and 2 threads."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    h, f, rows = shape["hidden"], shape["ffn"], 32 * 128
    weight = numpy_helper.from_array(np.random.default_rng(0).normal(size=(h, f)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, h])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, f])],
        initializer=[weight],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    x = np.random.default_rng(1).normal(size=(rows, h)).astype(np.float32)
    out: dict[str, Any] = {}
    for threads in (1, 2):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(proto, options, providers=["CPUExecutionProvider"])
        session.run(None, {"x": x})
        best = min(_timed(lambda s=session: s.run(None, {"x": x})) for _ in range(5))
        out[f"ort_matmul_x{threads}"] = round(2 * rows * h * f / best / 1e9, 1)
        code = (
            "import numpy as np, time; a = np.ones((2048, 2048), np.float32); a @ a; ts = []\n"
            "for _ in range(5):\n t = time.perf_counter(); a @ a; ts.append(time.perf_counter() - t)\n"
            "print(2 * 2048 ** 3 / min(ts) / 1e9)"
        )
        env = {
            "OMP_NUM_THREADS": str(threads),
            "OPENBLAS_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads),
        }
        found = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        out[f"numpy_sgemm_x{threads}"] = round(float(found.stdout), 1)
        _log("matmul", out)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    shape = graph_shape()
    result: dict[str, Any] = {
        "shape": shape,
        "flops_per_token_count": {n: flops(n, shape) for n in (32, 128, 256)},
    }
    corpora: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="embedding-cost-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", args.repo, "archive", "HEAD"], capture_output=True, check=True)
        subprocess.run(["tar", "x", "-C", str(tree)], input=archive.stdout, check=True)
        commit = subprocess.run(
            ["git", "-C", args.repo, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        for name, kind, source in (
            ("cranfield", "beir", DATASETS / "cranfield"),
            (f"this repository ({commit.stdout.strip()})", "tree", tree),
        ):
            texts = chunk_texts(kind, source, Path(tmp) / "data" / name.split()[0])
            batches, _ = batches_of(texts, shape)
            corpora[name] = {"texts": len(texts), **padding(batches, shape)}
            _log(name, corpora[name])
            if kind == "beir":
                sample = texts[: args.sample]
        shutil.rmtree(tree, ignore_errors=True)
    result["corpora"] = corpora
    result["model"] = model_rate(sample, shape)
    result["matmul"] = matmul_rates(shape)
    return result


def render(result: dict[str, Any]) -> str:
    s = result["shape"]
    per = result["flops_per_token_count"]
    lines = [
        f"Graph: {s['layers']} layers, hidden {s['hidden']}, FFN {s['ffn']}; FLOPs of one sequence: "
        + ", ".join(f"{float(v) / 1e9:.2f} G at {n} tokens" for n, v in per.items())
        + ".",
        "",
        "| corpus | distinct texts | windows | mean tokens | windows in 256-wide batches | padded tokens | "
        "padding share | GFLOP (padded) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, c in result["corpora"].items():
        lines.append(
            f"| {name} | {c['texts']:,} | {c['windows']:,} | {c['mean_tokens']} | "
            f"{c['full_width_share']:.1%} | {c['padded_tokens']:,} | {c['padding_share']:.2%} | "
            f"{c['gflops_padded']:,} |"
        )
    m, mm = result["model"], result["matmul"]
    lines += [
        "",
        f"| threads | MiniLM fp32 passages/s ({m['texts']} cranfield chunks) | its GFLOP/s (useful) | "
        "a lone MatMul in ONNX Runtime, GFLOP/s | numpy sgemm 2048³, GFLOP/s |",
        "|---:|---:|---:|---:|---:|",
    ]
    for t in (1, 2):
        r = m[f"x{t}"]
        lines.append(
            f"| {t} | {r['passages_s']} | {r['gflop_s']} ({r['useful_gflop_s']}) | "
            f"{mm[f'ort_matmul_x{t}']} | {mm[f'numpy_sgemm_x{t}']} |"
        )
    return "\n".join(lines)
