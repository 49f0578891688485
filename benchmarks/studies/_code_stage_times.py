"""Query p50 per stage on a code repository of about 5,000 chunks (issue 37, item "query p50 on a
5,000-chunk repository, every rule its share"): a one-off measurement, not a harness study.

Ingests ``--folder`` (the installed SQLAlchemy and networkx packages together: about 6,200
chunks, 3,100 each; twenty questions written for each, below) with the fake
embedder into ``--work`` (vectors from hashed words: the ingest takes minutes, not the hour
MiniLM would take on a loaded machine), then asks each question ``--repeat`` times through
``Engine.query`` (default settings with ``features.implementation`` on, top 10) and prints
each trace stage's p50 and the wall p50, as JSON. The query embedding of the real model is
timed beside it (``--model``, MiniLM by default): the fake embedder's stage costs nothing, so
``embed`` is the model's own cost.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/studies/_code_stage_times.py \\
        --work /tmp/stage_times --out benchmarks/results/code_stage_times_37.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

SQLALCHEMY = (
    "how is a connection returned to the pool when it is closed?",
    "where is create_engine defined?",
    "Session.flush",
    "how does the unit of work order inserts so that parents come before children?",
    "how are the rows of a result turned into ORM objects?",
    "where is the SQL of a SELECT statement compiled into a string?",
    "what does relationship do with back_populates?",
    "how is lazy loading of a relationship triggered on attribute access?",
    "where are database dialects registered and loaded by name?",
    "how are bound parameters escaped for the database driver?",
    "QueuePool",
    "how does the identity map keep one object per primary key?",
    "why is a detached instance error raised?",
    "where are column types converted to Python values?",
    "how is a transaction rolled back when an exception happens inside a session block?",
    "what happens when a connection in the pool is invalidated?",
    "how are joins between mapped classes inferred from foreign keys?",
    "where is the schema reflected from an existing database?",
    "declarative_base",
    "how is a many-to-many association table used when loading a collection?",
)
NETWORKX = (
    "how is the shortest path between two nodes computed with Dijkstra's algorithm?",
    "where is pagerank defined?",
    "DiGraph.add_edge",
    "how are the connected components of an undirected graph found?",
    "how does the graph store the neighbours of each node?",
    "where is a graph read from a GML file?",
    "what does maximum_flow return?",
    "how are isomorphic graphs detected?",
    "how is betweenness centrality computed for every node?",
    "where are random graphs with a given degree sequence generated?",
    "topological_sort",
    "how does a minimum spanning tree get built with Kruskal's algorithm?",
    "why does a cycle make a directed graph have no topological order?",
    "where are node attributes copied when a subgraph view is made?",
    "how is the adjacency matrix of a graph built as a sparse array?",
    "what happens when an edge is removed that is not in the graph?",
    "how are communities detected by modularity?",
    "where is the graph drawn with matplotlib?",
    "MultiDiGraph",
    "how is the diameter of a graph computed?",
)


FEATURES = {"implementation": True}  # off by default: on here, so that its share is measured


def main() -> None:
    import sqlalchemy

    p = argparse.ArgumentParser()
    site = Path(sqlalchemy.__file__).parent.parent
    p.add_argument("--folder", nargs="+", default=[str(site / "sqlalchemy"), str(site / "networkx")])
    p.add_argument("--work", required=True)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    p.add_argument("--out", default=None)
    p.add_argument(
        "--default", action="store_true", help="the default settings as shipped (implementation off)"
    )
    args = p.parse_args()
    settings = Settings().with_overrides({"paths.data_dir": args.work, "embedding.model": "fake"})
    engine = Engine(settings)
    start = time.perf_counter()
    report = engine.ingest([Path(f) for f in args.folder])
    ingest_s = time.perf_counter() - start
    chunks = engine.stats().chunks
    stages: dict[str, list[float]] = {}
    walls: list[float] = []
    cpus: list[float] = []  # the process's CPU seconds a query: what a loaded machine moves least
    features = {} if args.default else FEATURES
    by_folder = {"sqlalchemy": SQLALCHEMY, "networkx": NETWORKX}
    questions = tuple(q for f in args.folder for q in by_folder.get(Path(f).name, ()))
    for q in questions[:2]:
        engine.query(q, top_k=10)  # warm up
    for _ in range(args.repeat):
        for q in questions:
            t, c = time.perf_counter(), time.process_time()
            result = engine.query(q, top_k=10, features=features)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            for timing in result.trace.timings:
                stages.setdefault(timing.stage, []).append(timing.seconds)
    engine.close()
    asked = len(walls)
    p50 = {s: round(1000 * statistics.median(v + [0.0] * (asked - len(v))), 2) for s, v in stages.items()}
    ran = {s: len(v) for s, v in stages.items()}
    embed_ms = None
    if args.model:
        from hybrid_rag.models.factory import make_embedder

        model = make_embedder(Settings().with_overrides({"embedding.model": args.model}).embedding)
        model.embed_queries(["warm up"])
        times = []
        for q in questions * args.repeat:
            t = time.perf_counter()
            model.embed_queries([q])
            times.append(time.perf_counter() - t)
        embed_ms = round(1000 * statistics.median(times), 2)
    out = {
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "folder": args.folder,
        "chunks": chunks,
        "ingest_s": round(ingest_s, 1),
        "embedded": report.embedded,
        "questions": len(questions),
        "asked": asked,
        "features": features,
        "wall_p50_ms": round(1000 * statistics.median(walls), 2),
        "cpu_p50_ms": round(1000 * statistics.median(cpus), 2),
        "wall_p95_ms": round(1000 * sorted(walls)[int(0.95 * (len(walls) - 1))], 2),
        "stage_p50_ms": p50,
        "stage_ran": ran,
        "model_query_embed_p50_ms": embed_ms,
    }
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
