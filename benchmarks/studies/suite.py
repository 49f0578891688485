"""Quality suite: every dataset x every configuration of the ablation list, written to JSON.

For each BEIR-layout dataset under ``--datasets`` the corpus is ingested once per index group
(configurations whose overrides leave the index alone share one ingest, see ``configs.py``),
then every configuration answers every judged query through ``Engine.query`` (the code path users
run) and is scored with ranx: nDCG@10, MRR@10, P@3, Recall@50, Recall@100, mean and per query,
so that two runs can be compared with a paired test (``report.py --compare A.json B.json``).
Latency percentiles per stage come from the query traces (``wall``: around the call).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run suite          # the full suite
    .venv/bin/python benchmarks/harness.py run suite --fake --max-queries 20 --configs bm25 default
    .venv/bin/python benchmarks/harness.py report suite                        # its RESULTS.md tables

The result records the data (files' sha256, counts), the base settings once and each
configuration's overrides, the warm-up; the harness adds the machine, the load and the commit.
It is written compact (``_suite_tables.compact``: query ids once, one array a metric).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import ExperimentResult, evaluate_engine, ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset, load_beir
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.protocols import Embedder
from hybrid_rag.retrieval.retriever import resolve_flags
from hybrid_rag.settings import Settings, load_settings
from studies._suite_configs import BASELINE, CONFIGS, BenchConfig, group_by_index, select_configs
from studies._suite_tables import compact, expand, quality_section, stage_section

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
WORK = ROOT / "benchmarks" / "work" / "suite"
WARMUP = 3
DIGITS = 6


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- data ------------------------------------------------------------------------------------------


def find_datasets(root: Path, only: Sequence[str] = ()) -> list[Path]:
    """BEIR folders (with a corpus.jsonl) under ``root``, by name; ``only`` keeps those named."""
    found = sorted(p for p in root.iterdir() if (p / "corpus.jsonl").is_file()) if root.is_dir() else []
    if only:
        missing = sorted(set(only) - {p.name for p in found})
        if missing:
            raise SystemExit(f"suite: no dataset {', '.join(missing)} under {root}")
        found = [p for p in found if p.name in only]
    if not found:
        raise SystemExit(f"suite: no BEIR datasets (folders with corpus.jsonl) under {root}")
    return found


def _natural(key: str) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key))


def limit_queries(dataset: BeirDataset, n: int | None) -> BeirDataset:
    """At most ``n`` judged queries, evenly spaced over the ids in natural order (all when None)."""
    qids = sorted(dataset.qrels, key=_natural)
    if n is None or n >= len(qids):
        return dataset
    step = len(qids) / n
    kept = [qids[int(i * step)] for i in range(n)]
    return BeirDataset(
        dataset.name,
        dataset.corpus,
        {q: dataset.queries[q] for q in kept},
        {q: dataset.qrels[q] for q in kept},
    )


def fingerprint(folder: Path) -> dict[str, str]:
    """sha256 of the files a dataset is read from, so two results can be checked for the same data."""
    out = {}
    for rel in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        digest = hashlib.sha256()
        with (folder / rel).open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        out[rel] = digest.hexdigest()
    return out


# -- engines ---------------------------------------------------------------------------------------


def open_engine(settings: Settings, work: Path, embedder: Embedder) -> tuple[Engine, list[str]]:
    """An Engine on ``work`` with the shared embedder; a reranker is attached when the engine has none.

    ``Engine`` builds its retriever without a reranker (so ``features.rerank`` would only add the
    note "rerank skipped"); the suite gives it the one ``rerank.backend`` names, as the CLI would.
    """
    from hybrid_rag.retrieval.rerank import make_reranker

    engine = Engine(settings.with_overrides({"paths.data_dir": str(work)}), embedder=embedder)
    notes = []
    if engine.retriever.reranker is None:
        engine.retriever.reranker = make_reranker(engine.settings.rerank, embedder, bm25=engine.settings.bm25)
        notes.append(f"reranker {settings.rerank.backend} attached by the suite (Engine wires none)")
    return engine, notes


def ingest(dataset: BeirDataset, settings: Settings, work: Path, embedder: Embedder) -> dict[str, Any]:
    """Ingest ``dataset`` into ``work`` (incremental: a kept folder costs a comparison of hashes)."""
    engine, _ = open_engine(settings, work, embedder)
    try:
        before = engine.store.chunk_count() if engine.store.exists else 0
        seconds = ingest_dataset(engine, dataset)
        stats = engine.stats()
        live = engine.indices.get()
        return {
            "work_dir": str(work),
            "seconds": round(seconds, 3),
            "fresh": before == 0,
            "chunks": stats.chunks,
            "vectors": int(getattr(live.dense, "window_count", len(live.dense))),
            "bytes_on_disk": dict(stats.bytes_on_disk),
            "model": str(engine.embedder.model_name),  # embedding.model auto resolved as ingest does
        }
    finally:
        engine.close()


def result_record(
    config: BenchConfig, settings: Settings, result: ExperimentResult, group: str, seconds: float
) -> dict[str, Any]:
    flags = resolve_flags(settings.features, config.features)
    return {
        "dataset": result.dataset,
        "config": config.name,
        "description": config.description,
        "mode": result.mode,
        "features": flags.model_dump(),
        "overrides": dict(config.overrides),
        "index_group": group,
        "queries": result.queries,
        "chunks": result.chunks,
        "metrics": {k: round(v, DIGITS) for k, v in result.report.means.items()},
        "latency_ms": {s: {k: round(v, 3) for k, v in p.items()} for s, p in result.latency_ms.items()},
        "notes": list(result.notes),
        "model": result.model,
        "seconds": round(seconds, 2),
        "settings": settings.model_dump(mode="json"),
        "per_query": {
            m: {q: round(v, DIGITS) for q, v in values.items()}
            for m, values in result.report.per_query.items()
        },
    }


def run_dataset(
    folder: Path, configs: Sequence[BenchConfig], base: Settings, args: argparse.Namespace
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    dataset = limit_queries(load_beir(folder), args.max_queries)
    info: dict[str, Any] = {
        "name": dataset.name,
        "path": str(folder),
        "docs": len(dataset.corpus),
        "queries": len(dataset.queries),
        "judgements": sum(len(d) for d in dataset.qrels.values()),
        "sha256": fingerprint(folder),
        "ingest": {},
    }
    records: list[dict[str, Any]] = []
    notes: set[str] = set()
    embedders: dict[str, Embedder] = {}
    for group, members in group_by_index(configs, base).items():
        group_settings = members[0].settings(base)
        key = json.dumps(group_settings.embedding.model_dump(mode="json"), sort_keys=True)
        embedder = embedders.setdefault(key, make_embedder(group_settings.embedding))
        work = Path(args.work) / dataset.name / group
        if args.fresh and work.exists():
            shutil.rmtree(work)
        log(f"{dataset.name}: ingest group {group} ({', '.join(c.name for c in members)}) into {work}")
        info["ingest"][group] = ingest(dataset, group_settings, work, embedder)
        log(
            f"{dataset.name}: ingest {info['ingest'][group]['seconds']:.1f} s, "
            f"model {info['ingest'][group]['model']}"
        )
        for config in members:
            settings = config.settings(base)
            engine, engine_notes = open_engine(settings, work, embedder)
            notes.update(engine_notes)
            start = time.perf_counter()
            try:
                result = evaluate_engine(
                    engine,
                    dataset,
                    mode=config.resolved_mode(base),
                    features=dict(config.features),
                    warmup=args.warmup,
                    ingest_seconds=info["ingest"][group]["seconds"],
                )
            finally:
                engine.close()
            seconds = time.perf_counter() - start
            records.append(result_record(config, settings, result, group, seconds))
            m = result.report.means
            log(
                f"{dataset.name} {config.name:22} nDCG@10 {m['ndcg@10']:.3f}  MRR@10 {m['mrr@10']:.3f}  "
                f"p50 {result.latency_ms['wall']['p50']:.1f} ms  ({seconds:.0f} s)"
            )
    return info, records, sorted(notes)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--datasets",
        default=str(DATASETS),
        help="folder of BEIR datasets (default %(default)s; or HYBRID_RAG_DATASETS)",
    )
    p.add_argument("--only", nargs="*", default=[], help="dataset names to run (default: all)")
    p.add_argument(
        "--configs", nargs="*", default=[], help=f"configurations (default: all of {len(CONFIGS)})"
    )
    p.add_argument("--config", help="base settings YAML (default: the built-in defaults)")
    p.add_argument(
        "--fake", action="store_true", help="the hash embedder instead of the model (plumbing only)"
    )
    p.add_argument("--max-queries", type=int, default=None, help="evaluate this many judged queries")
    p.add_argument("--warmup", type=int, default=WARMUP, help="untimed queries before each configuration")
    p.add_argument("--work", default=str(WORK), help="ingested stores, kept between runs (%(default)s)")
    p.add_argument("--fresh", action="store_true", help="delete the work folders first (time a full ingest)")
    p.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a busy 2-core machine torch's default made one query "
        "embedding take 0.2-1.2 s; 0: torch's default)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    base = load_settings(args.config)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    configs = select_configs(args.configs)
    names = [c.name for c in configs]
    if BASELINE not in names:
        log(f"note: the baseline configuration {BASELINE!r} is not in the run; no paired tests in the report")
    datasets, results, notes = [], [], set()
    for folder in find_datasets(Path(args.datasets), args.only):
        info, records, dataset_notes = run_dataset(folder, configs, base, args)
        datasets.append(info)
        results.extend(records)
        notes.update(dataset_notes)
    out = {
        "protocol": {
            "warmup_queries": args.warmup,
            "repeats": 1,
            "top_k": 100,
            "embedder": "fake" if args.fake else base.embedding.model,
            "max_queries": args.max_queries,
            "torch_threads": args.torch_threads or "default",
            "timing": "per query: the trace's stages; wall = around Engine.query; one pass (repeats 1)",
        },
        "configs": [c.to_dict() for c in configs],
        "baseline": BASELINE,
        "datasets": datasets,
        "results": results,
        "notes": sorted(notes),
    }
    return compact(out)


def render(result: dict[str, Any]) -> str:
    """The quality table (paired tests against the baseline) and the per-stage latency table."""
    suite = expand(result)
    return "\n".join([*quality_section(suite), *stage_section(suite)])
