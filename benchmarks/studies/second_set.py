"""The second vector set (``indices/second_dense.py``): a MiniLM-built English index, then
``rebuild --second-model multilingual-e5-small``; Russian questions over it, English ones before
and after.

For each corpus (xquad_en's 120 paragraphs; cranfield, optionally cut to ``--max-docs``): a fresh
data dir ingested with all-MiniLM-L6-v2 (what ``embedding.model: auto`` gives English text),
the English questions asked (every judged one, or ``--max-queries``), then the Russian ones
where there are (xquad_ru's over xquad_en's paragraphs: ``xquad_ru>en``), then the second set
built as ``hybrid-rag rebuild --second-model`` builds it (``Engine.rebuild``), its seconds and its
bytes on disk recorded, then both sets of questions again. English: the documents and scores of
every question before and after, compared for identity. Russian: MRR@10 of the default (hybrid),
the dense stage alone, and the default before the second set (the warning's noise).

    nice -n 10 .venv/bin/python benchmarks/harness.py run second_set
    nice -n 10 .venv/bin/python benchmarks/harness.py run second_set --only cranfield --max-docs 300
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import ingest_dataset, run_queries
from hybrid_rag.evaluation.metrics import BeirDataset, evaluate, load_beir
from hybrid_rag.indices.second_dense import SECOND_DENSE
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings
from studies._suite_configs import OPTIONAL_STAGES_OFF

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
FIRST, SECOND = "all-MiniLM-L6-v2", "multilingual-e5-small"
METRIC = "mrr@10"
# corpus -> the set whose questions cross to it
CORPORA = {"xquad_en": "xquad_ru", "cranfield": None, "cosqa": None}
FAKE_FIRST = "sentence-transformers/all-MiniLM-L6-v2"  # --fake: the hash embedder under MiniLM's name


def log(message: str) -> None:
    print(f"[second_set {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder holding the BEIR sets (%(default)s)")
    p.add_argument("--only", nargs="*", default=list(CORPORA), choices=list(CORPORA))
    p.add_argument("--max-docs", type=int, default=None, help="cranfield: its first N documents only")
    p.add_argument("--max-queries", type=int, default=None, help="judged questions per set, spread evenly")
    p.add_argument(
        "--fake",
        action="store_true",
        help="the identity check only: hash embedders under the two models' names (64 and 32 dimensions)",
    )


def spread(ids: list[str], n: int | None) -> list[str]:
    if n is None or n >= len(ids):
        return ids
    return [ids[int(i * len(ids) / n)] for i in range(n)]


def questions(ds: BeirDataset, docs: set[str], n: int | None) -> BeirDataset:
    """``ds``'s judged questions whose relevant documents are all among ``docs``, ``n`` spread evenly."""
    judged = [q for q in ds.qrels if q in ds.queries and set(ds.qrels[q]) <= docs]
    keep = spread(judged, n)
    return BeirDataset(ds.name, ds.corpus, {q: ds.queries[q] for q in keep}, {q: ds.qrels[q] for q in keep})


def ask(
    engine: Engine, ds: BeirDataset, mode: str, features: dict[str, bool] | None = None
) -> dict[str, Any]:
    run, _, notes = run_queries(engine, ds, mode=mode, features=features)
    report = evaluate(run, ds.qrels)
    return {
        "mrr@10": round(report.means[METRIC], 4),
        "ndcg@10": round(report.means["ndcg@10"], 4),
        "run": run,
        "second_set_used": any("the second vector set" in n for n in notes),  # never for English
    }


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(root: Path, corpus: str, cross: str | None, args: argparse.Namespace) -> dict[str, Any]:
    ds = load_beir(root / corpus)
    if args.max_docs and corpus == "cranfield":
        ids = sorted(ds.corpus)[: args.max_docs]
        ds = BeirDataset(ds.name, {d: ds.corpus[d] for d in ids}, ds.queries, ds.qrels)
    docs = set(ds.corpus)
    english = questions(ds, docs, args.max_queries)
    crossing = None
    if cross:
        other = load_beir(root / cross)
        crossing = questions(
            BeirDataset(f"{cross}>{corpus[-2:]}", ds.corpus, other.queries, ds.qrels), docs, args.max_queries
        )
    out: dict[str, Any] = {"documents": len(ds.corpus), "english_questions": len(english.qrels)}
    with tempfile.TemporaryDirectory(prefix="hybrid-rag-second-") as tmp:
        settings = Settings().with_overrides({"paths.data_dir": tmp, "embedding.model": FIRST})
        engine = Engine(settings, embedder=FakeEmbedder(64, model_name=FAKE_FIRST) if args.fake else None)
        if args.fake:
            engine.second_embedders.make = lambda model: FakeEmbedder(32, model_name=model)
        try:
            t0 = time.perf_counter()
            ingest_dataset(engine, ds)
            out["ingest_seconds"] = round(time.perf_counter() - t0, 1)
            out["chunks"] = engine.store.chunk_count()
            log(f"{corpus}: ingested {out['chunks']} chunks in {out['ingest_seconds']} s")
            before = ask(engine, english, "hybrid") if english.qrels else None
            cross_before = ask(engine, crossing, "hybrid") if crossing else None
            t0 = time.perf_counter()
            report = engine.rebuild(second_model=SECOND)
            out["rebuild_seconds"] = round(time.perf_counter() - t0, 1)
            out["second_seconds"] = round(report.seconds.get("second_dense", 0.0), 1)
            version = engine.indices.versions.directory(report.version)
            entry = engine.indices.versions.manifest(report.version)[SECOND_DENSE]
            out["second"] = {k: entry[k] for k in ("model", "chunks", "embedded", "dimension")}
            out["second_bytes"] = tree_bytes(version / entry["folder"])
            out["first_dense_bytes"] = sum(
                (version / n).stat().st_size
                for n in ("dense.faiss", "dense.json", "windows.json")
                if (version / n).exists()
            )
            log(f"{corpus}: second set {out['second_seconds']} s, {out['second_bytes']} bytes")
            if before is not None:
                after = ask(engine, english, "hybrid")
                same = sum(before["run"][q] == after["run"].get(q) for q in before["run"])
                out["english"] = {
                    "before": {k: before[k] for k in ("mrr@10", "ndcg@10")},
                    "after": {k: after[k] for k in ("mrr@10", "ndcg@10")},
                    "identical_questions": same,
                    "second_set_used": after["second_set_used"],
                    "questions": len(before["run"]),
                }
            if crossing is not None and cross_before is not None:
                out["cross"] = {
                    "name": crossing.name,
                    "questions": len(crossing.qrels),
                    "default_before": {k: cross_before[k] for k in ("mrr@10", "ndcg@10")},
                    "default": {k: v for k, v in ask(engine, crossing, "hybrid").items() if k != "run"},
                    "dense": {
                        k: v
                        for k, v in ask(engine, crossing, "dense", OPTIONAL_STAGES_OFF).items()
                        if k != "run"
                    },
                }
                log(f"{crossing.name}: {out['cross']['default']} (before {out['cross']['default_before']})")
        finally:
            engine.close()
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(args.datasets)
    result: dict[str, Any] = {
        "max_docs": args.max_docs,
        "max_queries": args.max_queries,
        "fake": bool(args.fake),
        "corpora": {},
    }
    for corpus in args.only:
        result["corpora"][corpus] = measure(root, corpus, CORPORA[corpus], args)
    return result


def render(result: dict[str, Any]) -> str:
    corpora = result["corpora"]
    lines = [
        "| corpus | chunks | ingest, MiniLM (s) | second set build (s) | rebuild total (s) "
        "| second set on disk | first set on disk |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in corpora.items():
        second, first = row["second_bytes"] / 1e6, row["first_dense_bytes"] / 1e6
        lines.append(
            f"| {name} ({row['documents']} docs) | {row['chunks']} | {row['ingest_seconds']} "
            f"| {row['second_seconds']} | {row['rebuild_seconds']} | {second:.2f} MB | {first:.2f} MB |"
        )
    crossing = [row["cross"] for row in corpora.values() if "cross" in row]
    if crossing:
        lines += [
            "",
            "| questions | default before | default, second set | dense alone |",
            "|---|---|---|---|",
        ]
    for c in crossing:
        before, now, dense = c["default_before"]["mrr@10"], c["default"]["mrr@10"], c["dense"]["mrr@10"]
        lines.append(f"| {c['name']} ({c['questions']}) | {before:.3f} | **{now:.3f}** | {dense:.3f} |")
    lines += [
        "",
        "| English questions | MRR@10 before | after | identical documents and scores |",
        "|---|---|---|---|",
    ]
    for name, row in corpora.items():
        if "english" in row:
            e = row["english"]
            same = f"{e['identical_questions']} of {e['questions']}"
            lines.append(f"| {name} | {e['before']['mrr@10']:.4f} | {e['after']['mrr@10']:.4f} | {same} |")
    return "\n".join(lines)
