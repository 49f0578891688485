"""Run the engine on a judged BEIR-layout collection: ingest, query every judged query, score.

Shared by ``hybrid-rag eval`` and the suite study (``benchmarks/studies/suite.py``) so that every
figure the project reports comes from the same code path that users run.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.metrics import BeirDataset, EvalReport, evaluate
from hybrid_rag.ingest.loaders import load_text
from hybrid_rag.ingest.pipeline import Progress
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import Settings
from hybrid_rag.types import QueryResult, SourceType

_CODE_LINE = re.compile(
    r"^\s*(def |class |import |from \S+ import |return\b|function |public |#include)", re.M
)


def looks_like_code(texts: Sequence[str]) -> bool:
    """True when most texts have a line that starts like source code (def, class, import, return...)."""
    if not texts:
        return False
    return sum(1 for t in texts if _CODE_LINE.search(t)) >= 0.5 * len(texts)


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "mean": 0.0}
    arr = np.asarray(values, dtype=np.float64) * 1000.0
    return {
        "p50": float(np.percentile(arr, 50)),
        "p95": float(np.percentile(arr, 95)),
        "mean": float(arr.mean()),
    }


@dataclass(frozen=True)
class ExperimentResult:
    dataset: str
    mode: str
    features: Mapping[str, bool]
    report: EvalReport
    latency_ms: Mapping[str, Mapping[str, float]]
    queries: int
    chunks: int
    ingest_seconds: float
    notes: tuple[str, ...] = ()
    run: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    model: str = ""  # the dense model the engine embedded with (``embedding.model: auto`` resolved)
    model_choice: str = ""  # auto's choice and its reason, as ``hybrid-rag ingest`` prints it

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "mode": self.mode,
            "features": dict(self.features),
            "metrics": dict(self.report.means),
            "latency_ms": {k: dict(v) for k, v in self.latency_ms.items()},
            "queries": self.queries,
            "chunks": self.chunks,
            "ingest_seconds": self.ingest_seconds,
            "notes": list(self.notes),
            "model": self.model,
            "model_choice": self.model_choice,
        }
        if per_query:
            out["per_query"] = {m: dict(v) for m, v in self.report.per_query.items()}
        return out


def ingest_dataset(engine: Engine, dataset: BeirDataset, progress: Progress | None = None) -> float:
    """Ingest a BEIR corpus (each document's path is its id); returns seconds taken."""
    texts = {
        doc_id: f"{title}\n\n{text}".strip() if title else text
        for doc_id, (title, text) in dataset.corpus.items()
    }
    source_type = SourceType.CODE if looks_like_code(list(texts.values())[:200]) else SourceType.TEXT
    language = "python" if source_type is SourceType.CODE else "text"
    files = [
        load_text(doc_id, text, source_type=source_type, language=language) for doc_id, text in texts.items()
    ]
    prepare = getattr(engine.embedder, "prepare_texts", None)  # embedding.model: auto, as ingest decides:
    if prepare is not None and source_type is SourceType.TEXT:  # by its prose (code files are not sampled)
        prepare(list(texts.values()))
    start = time.perf_counter()
    engine.ingestor.ingest_files(files, collection=dataset.name, progress=progress)
    return time.perf_counter() - start


def embedding_model(engine: Engine) -> tuple[str, str]:
    """(the dense model's name, auto's choice and reason or "") of an engine that has ingested."""
    return str(engine.embedder.model_name), str(getattr(engine.embedder, "choice", None) or "")


def doc_run(result: QueryResult) -> dict[str, float]:
    """Chunks → documents (a chunk's path is its document id): each document at its best rank."""
    run: dict[str, float] = {}
    n = len(result.chunks)
    for rank, chunk in enumerate(result.chunks):
        run.setdefault(chunk.path, float(n - rank))
    return run


def run_queries(
    engine: Engine,
    dataset: BeirDataset,
    *,
    mode: str,
    features: Mapping[str, bool] | None = None,
    top_k: int = 100,
    progress: Progress | None = None,
) -> tuple[dict[str, dict[str, float]], dict[str, list[float]], list[str]]:
    """Every judged query in ``mode``; ``progress("queries <mode>", done, total)`` after each."""
    runs: dict[str, dict[str, float]] = {}
    stages: dict[str, list[float]] = {"total": []}
    notes: list[str] = []
    total = len(dataset.qrels)
    for done, qid in enumerate(dataset.qrels):
        if progress is not None:
            progress(f"queries {mode}", done, total)
        start = time.perf_counter()
        result = engine.query(dataset.queries[qid], top_k=top_k, mode=mode, features=features)
        stages.setdefault("wall", []).append(time.perf_counter() - start)  # the trace plus the overhead
        runs[qid] = doc_run(result)
        per_stage: dict[str, float] = {}
        for t in result.trace.timings:
            per_stage[t.stage] = per_stage.get(t.stage, 0.0) + t.seconds
        for stage, seconds in per_stage.items():
            stages.setdefault(stage, []).append(seconds)
        stages["total"].append(result.trace.total_seconds)
        notes.extend(result.trace.notes)
    if progress is not None:
        progress(f"queries {mode}", total, total)
    return runs, stages, sorted(set(notes))


def run_experiment(
    dataset: BeirDataset,
    settings: Settings,
    *,
    modes: Sequence[str] = ("hybrid",),
    features: Mapping[str, bool] | None = None,
    work_dir: Path | None = None,
    embedder: Embedder | None = None,
    warmup: int = 3,
    progress: Progress | None = None,
) -> list[ExperimentResult]:
    """Ingest ``dataset`` into ``work_dir`` (a throwaway folder when None) and evaluate each mode.

    With a kept ``work_dir`` a second run re-uses the store and its embedding cache.
    """
    with tempfile.TemporaryDirectory(prefix="hybrid-rag-eval-") as tmp:
        root = Path(work_dir) if work_dir is not None else Path(tmp)
        engine = Engine(settings.with_overrides({"paths.data_dir": str(root)}), embedder=embedder)
        try:
            ingest_seconds = ingest_dataset(engine, dataset, progress)
            results = [
                evaluate_engine(
                    engine,
                    dataset,
                    mode=mode,
                    features=features,
                    warmup=warmup if n == 0 else 0,
                    ingest_seconds=ingest_seconds,
                    progress=progress,
                )
                for n, mode in enumerate(modes)
            ]
            return results
        finally:
            engine.close()


def evaluate_engine(
    engine: Engine,
    dataset: BeirDataset,
    *,
    mode: str,
    features: Mapping[str, bool] | None = None,
    warmup: int = 3,
    ingest_seconds: float = 0.0,
    progress: Progress | None = None,
) -> ExperimentResult:
    """Evaluate one mode on an engine that already holds ``dataset``: no ingest, ``warmup``
    untimed queries, then every judged query. For ablations: ingest once with
    :func:`ingest_dataset`, then call this once per configuration (an Engine per settings)."""
    for qid in list(dataset.qrels)[:warmup]:
        engine.query(dataset.queries[qid], top_k=10, mode=mode, features=features)
    run, stages, notes = run_queries(engine, dataset, mode=mode, features=features, progress=progress)
    model, choice = embedding_model(engine)
    return ExperimentResult(
        dataset=dataset.name,
        mode=mode,
        features=dict(features or {}),
        report=evaluate(run, dataset.qrels),
        latency_ms={stage: percentiles(v) for stage, v in stages.items()},
        queries=len(run),
        chunks=engine.store.chunk_count(),
        ingest_seconds=ingest_seconds,
        notes=tuple(notes),
        run=run,
        model=model,
        model_choice=choice,
    )
