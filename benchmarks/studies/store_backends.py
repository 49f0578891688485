"""The store on SQLite and on PostgreSQL: ingest, re-ingest, query, and what old revisions cost.

    source scripts/pg_server.sh    # a throwaway PostgreSQL 15; exports TEST_POSTGRES_URL
    flock /tmp/hybrid-rag-bench.lock .venv/bin/python benchmarks/harness.py run store_backends
    .venv/bin/python benchmarks/harness.py report store_backends   # RESULTS.md#store-backends's table

Cranfield's 1,400 abstracts as one Markdown file each, ingested into a fresh data dir with the
store on SQLite (the file in the data dir) and on PostgreSQL (a fresh database on the server
``TEST_POSTGRES_URL`` names), with the deterministic fake embedder so that the figures are the
store's and the indices', not a model's. Then: a tenth of the files edited and ingested again
(the old revisions stay in the store for the kept versions), the first 100 Cranfield queries in
hybrid mode (p50/p95), the space the old revisions hold, and that space after the versions that
read them are pruned (two rebuilds with ``paths.keep_versions`` 2: garbage collection).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DATASET = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))


def _write_corpus(root: Path, docs: list[dict[str, str]]) -> list[Path]:
    root.mkdir(parents=True)
    paths = []
    for doc in docs:
        path = root / f"doc{int(doc['_id']):05d}.md"
        path.write_text(f"# {doc['title']}\n\n{doc['text']}\n")
        paths.append(path)
    return paths


def _store_bytes(engine: Engine, url: str | None) -> int:
    if url is None:
        return sum(
            p.stat().st_size for p in engine.settings.data_dir.glob(engine.settings.paths.store_file + "*")
        )
    from sqlalchemy import create_engine

    db = create_engine(url)
    with db.connect() as conn:
        size = conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar()
    db.dispose()
    return int(size)


def _one(backend: str, url: str | None, docs: list[dict[str, str]], queries: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        paths = _write_corpus(Path(tmp) / "corpus", docs)
        settings = Settings().with_overrides(
            {
                "paths.data_dir": str(Path(tmp) / "data"),
                "embedding.model": "fake",
                "store.url": url,
                "paths.keep_versions": 2,
            }
        )
        engine = Engine(settings)
        t = time.perf_counter()
        first = engine.ingest([Path(tmp) / "corpus"])
        ingest_s = time.perf_counter() - t
        for path in paths[::10]:  # a tenth of the files edited
            path.write_text(path.read_text() + "\nAn added closing remark on the experiment.\n")
        t = time.perf_counter()
        engine.ingest([Path(tmp) / "corpus"])
        reingest_s = time.perf_counter() - t
        engine.query(queries[0])  # warm-up: models, tokenizer, index load
        latencies = []
        for q in queries:
            t = time.perf_counter()
            engine.query(q, top_k=10)
            latencies.append((time.perf_counter() - t) * 1000)
        old = engine.stats().old_revisions
        store_bytes = _store_bytes(engine, url)
        t = time.perf_counter()
        engine.rollback(1)
        rollback_ms = (time.perf_counter() - t) * 1000
        rolled = engine.query(queries[0], top_k=10)
        engine.rebuild()
        engine.rebuild()  # keep_versions 2: the versions before the edit are pruned, their rows collected
        after = engine.stats().old_revisions
        engine.close()
    return {
        "store": backend,
        "documents": len(docs),
        "chunks": first.build.chunks if first.build else 0,
        "ingest_s": round(ingest_s, 2),
        "reingest_tenth_s": round(reingest_s, 2),
        "query_p50_ms": round(float(np.percentile(latencies, 50)), 1),
        "query_p95_ms": round(float(np.percentile(latencies, 95)), 1),
        "rollback_ms": round(rollback_ms, 1),
        "rolled_back_query_results": len(rolled.chunks),
        "rolled_back_dropped_notes": sum("dropped" in note for note in rolled.trace.notes),
        "store_bytes": store_bytes,
        "old_revisions": old,
        "old_revisions_after_gc": after,
    }


def _fresh_pg(server: str) -> tuple[str, Any]:
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    name = f"bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(make_url(server), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")

    def drop() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()

    return make_url(server).set(database=name).render_as_string(hide_password=False), drop


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--docs", type=int, default=1400)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--pg-url", default=os.environ.get("TEST_POSTGRES_URL"))


def run(args: argparse.Namespace) -> dict[str, Any]:
    folder = DATASET / "cranfield"
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").open()][: args.docs]
    queries = [json.loads(line)["text"] for line in (folder / "queries.jsonl").open()][: args.queries]
    if not args.pg_url:
        raise SystemExit("no PostgreSQL: `source scripts/pg_server.sh` first, or pass --pg-url")
    _one("warm-up", None, docs[:20], queries[:2])  # imports, tokenizer and index code loaded once
    results = [_one("SQLite", None, docs, queries)]
    url, drop = _fresh_pg(args.pg_url)
    try:
        results.append(_one("PostgreSQL 15", url, docs, queries))
    finally:
        drop()
    return {"dataset": "cranfield", "embedder": "fake", "results": results}


def render(payload: dict[str, Any]) -> str:
    """One row a store: ingest, re-ingest of a tenth, query latency, rollback, and old revisions."""
    lines = [
        "| store | docs | chunks | ingest (s) | re-ingest, 1/10 edited (s) | query p50 / p95 (ms) "
        "| rollback (ms) | store size (MB) | old revisions: chunks, text + vectors (MB) | after GC |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in payload["results"]:
        old, after = r["old_revisions"], r["old_revisions_after_gc"]
        held = (old["text_bytes"] + old["embedding_bytes"]) / 1e6
        lines.append(
            f"| {r['store']} | {r['documents']:,} | {r['chunks']:,} | {r['ingest_s']:.1f} "
            f"| {r['reingest_tenth_s']:.1f} | {r['query_p50_ms']:.0f} / {r['query_p95_ms']:.0f} "
            f"| {r['rollback_ms']:.0f} | {r['store_bytes'] / 1e6:.1f} | {old['chunks']:,}, {held:.2f} "
            f"| {after['chunks']} chunks |"
        )
    sqlite = payload["results"][0]
    old = sqlite["old_revisions"]
    share = old["chunks"] / max(1, sqlite["chunks"])
    lines += [
        "",
        f"Editing a tenth of the files retired {old['chunks']:,} chunk rows ({share:.0%} of the live "
        f"ones): {old['text_bytes'] / 1e3:,.0f} kB of text and {old['embedding_bytes'] / 1e3:,.0f} kB "
        f"of cached vectors ({old['cached_embeddings']:,} vectors no live chunk shares) stay in the "
        "store while a version that reads them is kept. Old revisions cost, per retired chunk, its "
        "text plus one vector a window (4 bytes a dimension), the same as a live chunk; the indices "
        "of the kept versions cost what `bytes_on_disk` lists per version. After two rebuilds pruned "
        f"the versions built before the edit, garbage collection had left "
        f"{sqlite['old_revisions_after_gc']['chunks']} old chunks. Rolled back to version 1, the "
        f"first query returned {sqlite['rolled_back_query_results']} results and "
        f"{sqlite['rolled_back_dropped_notes']} notes of results dropped for missing rows.",
    ]
    return "\n".join(lines)
