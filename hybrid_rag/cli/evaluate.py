"""``hybrid-rag eval|bench``: the judged evaluation and the quick benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

from hybrid_rag.cli.common import _print_json
from hybrid_rag.progress import Bars as _Bars
from hybrid_rag.settings import Settings


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from hybrid_rag.evaluation.experiment import run_experiment
    from hybrid_rag.evaluation.metrics import load_beir

    dataset = load_beir(args.dataset)
    modes = args.mode or ["hybrid"]
    bars = _Bars(not args.quiet, prefix="hybrid-rag eval")  # minutes of work: always say how far
    try:
        results = run_experiment(
            dataset,
            settings,
            modes=modes,
            work_dir=Path(args.work_dir) if args.work_dir else None,
            progress=bars,
        )
    finally:
        bars.close()
    if args.json:
        _print_json([r.to_dict(per_query=args.per_query) for r in results])
        return 0
    print(
        f"# {dataset.name}: {len(dataset.corpus)} docs, {results[0].chunks} chunks, "
        f"{results[0].queries} judged queries; ingest {results[0].ingest_seconds:.1f} s"
    )
    choice = f" ({results[0].model_choice})" if results[0].model_choice else ""
    print(f"# model: {results[0].model}{choice}")
    print("| mode | nDCG@10 | MRR@10 | P@3 | Recall@50 | Recall@100 | mean ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        m = r.report.means
        lat = r.latency_ms["total"]
        print(
            f"| {r.mode} | {m['ndcg@10']:.3f} | {m['mrr@10']:.3f} | {m['precision@3']:.3f} | "
            f"{m['recall@50']:.3f} | {m['recall@100']:.3f} | {lat['mean']:.1f} | {lat['p95']:.1f} |"
        )
    return 0


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    from hybrid_rag.evaluation.bench import format_quick_bench, run_quick_bench

    result = run_quick_bench(settings, docs=args.docs, queries=args.queries)
    if args.json:
        _print_json(result)
    else:
        print(format_quick_bench(result))
    return 0 if result.get("ok") else 1
