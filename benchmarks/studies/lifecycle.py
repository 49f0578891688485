"""Index lifecycle costs: one changed file into a ~10k-chunk corpus, a full rebuild, queries during it.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run lifecycle [--chunks 10000]
    .venv/bin/python benchmarks/harness.py report lifecycle     # RESULTS.md#index-lifecycle's tables

Index work is measured with the deterministic fake embedder (384 dimensions, windows like the
real model's) so that the figures are the engine's own costs; the real model's embedding time
for the changed file's chunks is measured separately and added in the table, since the embedding
cache means an incremental ingest embeds only those. The rebuild runs in a second process, as
the monthly cron job would, while this process queries the live index in a loop.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder, SentenceTransformerEmbedder
from hybrid_rag.settings import EmbeddingSettings, Settings

ROOT = Path(__file__).resolve().parents[1]  # benchmarks/
WORDS = [f"w{i}" for i in range(5000)]
ZIPF = 1.0 / np.arange(1, len(WORDS) + 1)
ZIPF /= ZIPF.sum()


def write_corpus(folder: Path, n_files: int, rng: np.random.Generator) -> None:
    """Markdown files of about 10 chunks each: 5 sections of 55 lines of 10 Zipf-distributed words."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        sections = []
        for s in range(5):
            lines = [" ".join(rng.choice(WORDS, size=10, p=ZIPF)) for _ in range(55)]
            sections.append(f"## file {i} section {s}\n\n" + "\n".join(lines))
        (folder / f"doc{i:05d}.md").write_text("\n\n".join(sections) + "\n")


def percentiles(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values) * 1000
    return {"p50": float(np.percentile(arr, 50)), "p95": float(np.percentile(arr, 95)), "n": len(values)}


def query_loop(engine: Engine, queries: list[str], until: float | None, count: int) -> list[float]:
    out = []
    i = 0
    while (until is None and i < count) or (until is not None and time.perf_counter() < until):
        start = time.perf_counter()
        engine.query(queries[i % len(queries)], top_k=10)
        out.append(time.perf_counter() - start)
        i += 1
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunks", type=int, default=10_000, help="approximate corpus size in chunks")
    parser.add_argument("--work", type=Path, default=ROOT / "work" / "lifecycle")


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    corpus, data = args.work / "corpus", args.work / "data"
    if args.work.exists():
        import shutil

        shutil.rmtree(args.work)
    n_files = max(1, args.chunks // 10)  # each file cuts into about 10 chunks
    write_corpus(corpus, n_files, rng)
    settings = Settings().with_overrides({"paths.data_dir": str(data), "embedding.model": "fake"})
    embedder = FakeEmbedder(dimension=384, window_words=120)
    engine = Engine(settings, embedder=embedder)

    t = time.perf_counter()
    first = engine.ingest([corpus])
    initial = time.perf_counter() - t
    chunks = engine.store.chunk_count()

    changed = corpus / "doc00007.md"
    changed.write_text(
        changed.read_text() + "\n## appended\n\n" + " ".join(rng.choice(WORDS, size=40)) + "\n"
    )
    t = time.perf_counter()
    incremental = engine.ingest([corpus])
    incremental_seconds = time.perf_counter() - t
    new_texts = [c.text for c in engine.store.iter_chunks() if c.path == str(changed.resolve())]

    real = SentenceTransformerEmbedder(EmbeddingSettings())
    real.embed_passages(["warm up"])
    t = time.perf_counter()
    real.embed_passage_windows(new_texts[: incremental.embedded or len(new_texts)])
    real_embed_seconds = time.perf_counter() - t

    t = time.perf_counter()
    rebuild = engine.rebuild()
    rebuild_seconds = time.perf_counter() - t

    queries = [" ".join(random.Random(i).choices(WORDS[:300], k=6)) for i in range(50)]
    query_loop(engine, queries, None, 10)  # warm-up
    idle = query_loop(engine, queries, None, 200)
    driver = (
        "import sys\nfrom hybrid_rag.engine import Engine\n"
        "from hybrid_rag.models.embedders import FakeEmbedder\n"
        "from hybrid_rag.settings import Settings\n"
        "s = Settings().with_overrides({'paths.data_dir': sys.argv[1], 'embedding.model': 'fake'})\n"
        "Engine(s, embedder=FakeEmbedder(dimension=384, window_words=120)).rebuild()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", driver, str(data)])
    version_before = engine.indices.get().version
    during: list[float] = []
    while proc.poll() is None:
        during += query_loop(engine, queries, time.perf_counter() + 0.5, 0)
    after_version = engine.query(queries[0]).index_version
    payload = {
        "benchmark": "lifecycle",
        "chunks": chunks,
        "files": n_files,
        "initial_ingest_seconds": initial,
        "initial_ingest_breakdown": first.seconds,
        "incremental": {
            "seconds_fake_embedder": incremental_seconds,
            "breakdown": incremental.seconds,
            "chunks_embedded": incremental.embedded,
            "real_model_embed_seconds_for_those_chunks": real_embed_seconds,
        },
        "rebuild_seconds": rebuild_seconds,
        "rebuild_breakdown": rebuild.seconds,
        "query_ms_idle": percentiles(idle),
        "query_ms_during_rebuild": percentiles(during),
        "hot_reload": {"version_before": version_before, "version_after": after_version},
    }
    engine.close()
    return payload


def _parts(breakdown: dict[str, float], suffix: dict[str, str] | None = None) -> str:
    """``chunk 5.7, dedupe 7.3, ...``: the stages that took 0.05 s or more."""
    names = {"read_store": "read", "bm25": "BM25"}
    return ", ".join(
        f"{names.get(k, k)} {v:.1f}{(suffix or {}).get(k, '')}" for k, v in breakdown.items() if v >= 0.05
    )


def render(payload: dict[str, Any]) -> str:
    """The steps' seconds with their stages, and query latency idle and during a rebuild."""
    inc, idle, during = payload["incremental"], payload["query_ms_idle"], payload["query_ms_during_rebuild"]
    new = inc["chunks_embedded"]
    return "\n".join(
        [
            f"| step ({payload['chunks']:,} chunks) | seconds |",
            "|---|---|",
            f"| initial ingest (index work) | {payload['initial_ingest_seconds']:.1f} "
            f"({_parts(payload['initial_ingest_breakdown'], {'embed': ' fake'})}) |",
            f"| one changed file, incremental ingest | **{inc['seconds_fake_embedder']:.1f}** "
            f"({_parts(inc['breakdown'])}) |",
            f"| + real-model embedding of its {new} new chunk{'s' if new != 1 else ''} "
            f"| {inc['real_model_embed_seconds_for_those_chunks']:.1f} |",
            f"| full rebuild from the store, nothing re-embedded | **{payload['rebuild_seconds']:.1f}** "
            f"({_parts(payload['rebuild_breakdown'])}) |",
            "",
            "| queries (top-10, hybrid) | p50 ms | p95 ms |",
            "|---|---|---|",
            f"| idle | {idle['p50']:.1f} | {idle['p95']:.1f} |",
            f"| while a rebuild runs in another process | {during['p50']:.1f} | {during['p95']:.1f} "
            f"({during['n']} queries, none failed) |",
        ]
    )
