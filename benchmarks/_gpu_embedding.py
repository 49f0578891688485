"""The embedder on a GPU: ``embedding.device: cuda`` against ``cpu`` on one machine.
(RESULTS.md#gpu-embedding)

Run where there is a GPU, onnxruntime-gpu and the packaged MiniLM::

    python benchmarks/_gpu_embedding.py --out gpu_embedding.json

Everything goes through the engine's own ``make_embedder`` (the ingest path, ``embed_passage_windows``):

- the CUDA session starts: the session's providers, and the CUDA libraries the process loaded;
- CUDA's vectors against the CPU's on the same texts (lowest cosine, largest difference);
- passages a second on CUDA at several batch sizes, and on the CPU with every core;
- the same model under sentence-transformers on CUDA (``embedding.runtime: torch``), an independent
  implementation of the same vectors, where torch is installed.

The texts are this repository's own files (``.py`` and ``.md``) in windows of 30 lines, so their
lengths are those of code and prose chunks; the figures say how many word pieces they hold.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings

ROOT = Path(__file__).resolve().parent.parent
WINDOW_LINES = 30


def corpus(limit: int) -> list[str]:
    """Windows of ``WINDOW_LINES`` lines of this repository's .py and .md files, in path order."""
    texts: list[str] = []
    for path in sorted(
        [*ROOT.glob("hybrid_rag/**/*.py"), *ROOT.glob("docs/*.md"), *ROOT.glob("tests/**/*.py")]
    ):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for start in range(0, len(lines), WINDOW_LINES):
            text = "\n".join(lines[start : start + WINDOW_LINES]).strip()
            if text:
                texts.append(f"{path.relative_to(ROOT)}\n{text}")
            if len(texts) >= limit:
                return texts
    return texts


def loaded_cuda_libraries() -> list[str]:
    """The CUDA and cuDNN libraries mapped into this process (where they were found)."""
    names = ("libcudart", "libcublas", "libcudnn", "libcurand", "libcufft", "libnvrtc", "providers_cuda")
    with open("/proc/self/maps", encoding="utf-8") as maps:
        paths = {line.split()[-1] for line in maps if any(n in line for n in names)}
    return sorted(paths)


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The best wall time of ``repeats`` calls of ``run`` (after one warm-up call) and its result."""
    result = run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def compare(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> dict[str, float]:
    left, right = np.vstack(a), np.vstack(b)
    cosines = np.sum(left * right, axis=1) / (np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1))
    return {
        "vectors": len(left),
        "min_cosine": float(cosines.min()),
        "mean_cosine": float(cosines.mean()),
        "max_abs_diff": float(np.abs(left - right).max()),
    }


def step(report: dict[str, Any], name: str, run: Callable[[], Any], out: Path) -> Any:
    """``run()`` recorded under ``name``: its result, or the error it raised (the others still run);
    the report is written to ``out`` after each step, so a run cut short keeps what it measured."""
    try:
        report[name] = run()
    except Exception as exc:
        report[name] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}
    print(name, json.dumps(report[name], default=str)[:1500], flush=True)
    out.write_text(json.dumps(report, indent=1, default=str))
    return report[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--texts", type=int, default=4000, help="texts for the CUDA throughput")
    parser.add_argument(
        "--cpu-texts", type=int, default=512, help="texts for the CPU figure and the comparison"
    )
    parser.add_argument("--batches", default="32,128,512")
    parser.add_argument(
        "--device", default="cuda", help="cpu: a dry run of this script where there is no GPU"
    )
    args = parser.parse_args()
    import onnxruntime as ort

    texts = corpus(args.texts)
    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "onnxruntime": ort.__version__,
            "available_providers": ort.get_available_providers(),
        },
        "texts": len(texts),
    }
    cuda = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, device=args.device))
    cpu = make_embedder(
        EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, device="cpu", threads=os.cpu_count())
    )

    def start_cuda() -> dict[str, Any]:
        started = time.perf_counter()
        cuda.embed_passages(["warm up"])
        model = cuda.model  # the OnnxModel: its session's providers are what ran
        return {
            "load_s": round(time.perf_counter() - started, 2),
            "session_providers": model._session.get_providers(),
            "libraries": loaded_cuda_libraries(),
        }

    if "error" in step(report, "cuda_session", start_cuda, args.out):
        args.out.write_text(json.dumps(report, indent=1, default=str))
        return
    tokenizer = cuda.model.raw_tokenizer
    pieces = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    report["word_pieces"] = {
        "mean": float(np.mean(pieces)),
        "p50": float(np.median(pieces)),
        "over_256": float(np.mean(np.array(pieces) > 256)),
    }
    sample = texts[: args.cpu_texts]

    def equal() -> dict[str, Any]:
        on_gpu = cuda.embed_passage_windows(sample)
        on_cpu = cpu.embed_passage_windows(sample)
        return compare(on_gpu, on_cpu)

    step(report, "cuda_vs_cpu", equal, args.out)
    step(
        report,
        "cuda_query_vs_cpu",
        lambda: compare([cuda.embed_queries(sample[:200])], [cpu.embed_queries(sample[:200])]),
        args.out,
    )

    def throughput(embedder: Any, batch: int, items: list[str], repeats: int) -> dict[str, Any]:
        embedder.settings = embedder.settings.model_copy(update={"batch_size": batch})
        seconds, windows = timed(lambda: embedder.embed_passage_windows(items), repeats)
        count = sum(len(w) for w in windows)
        return {
            "batch": batch,
            "texts": len(items),
            "windows": count,
            "seconds": round(seconds, 3),
            "texts_per_s": round(len(items) / seconds, 1),
            "windows_per_s": round(count / seconds, 1),
        }

    for batch in [int(b) for b in args.batches.split(",")]:
        step(report, f"cuda_batch_{batch}", lambda b=batch: throughput(cuda, b, texts, 3), args.out)
    step(report, "cpu_all_cores_batch_32", lambda: throughput(cpu, 32, sample, 1), args.out)

    def torch_runtime() -> dict[str, Any]:
        st = make_embedder(
            EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, device=args.device, runtime="torch")
        )
        on_torch = st.embed_passage_windows(sample)
        on_onnx = cuda.embed_passage_windows(sample)
        figures = compare(on_torch, on_onnx)
        figures["throughput"] = throughput(st, 128, texts, 2)
        return figures

    step(report, "torch_cuda_vs_onnx_cuda", torch_runtime, args.out)


if __name__ == "__main__":
    main()
