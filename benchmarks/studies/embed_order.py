"""What the dense fill embeds first: the share of the implementation's chunks with a vector after
N seconds of a BM25-first ingest's embedding, in the role order (``ingest.embed_order``, the
default) against the store's chunk order (before it: files in walk order).

Each arm ingests the same tree into a fresh data dir, BM25 first (``bm25_first_min_bytes`` 0, no
partial versions: ``publish_every_seconds`` 0), with the default model, and stops the fill
``--budget`` seconds after it began. The order each arm embeds in is recorded from the fill
(``ingest/fill.py`` calls ``embed_order.ordered_todo``; the "stored" arm replaces it with the chunk
id order), and the fill's progress gives how many of those texts were embedded at each moment: the
curve of source chunks dense by time follows. The per-role counts are of distinct texts.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run embed_order --budget 180
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work" / "embed_order"
MARKS = (15, 30, 60, 90, 120, 180, 240, 300)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", default=str(ROOT), help="the tree to ingest (default: this repository)")
    p.add_argument("--budget", type=float, default=180.0, help="seconds of embedding per arm")
    p.add_argument("--arms", nargs="+", default=["roles", "stored"], choices=["roles", "stored"])
    p.add_argument("--work", default=str(WORK))


def run_arm(repo: Path, data: Path, arm: str, budget: float) -> dict[str, Any]:
    from hybrid_rag.code.roles import SOURCE, chunk_role
    from hybrid_rag.engine import Engine
    from hybrid_rag.ingest import fill
    from hybrid_rag.ingest.embed_order import ordered_todo
    from hybrid_rag.paths import ingested_root
    from hybrid_rag.settings import Settings

    shutil.rmtree(data, ignore_errors=True)
    settings = Settings().with_overrides(
        {
            "paths.data_dir": str(data),
            "ingest.bm25_first_min_bytes": 0,
            "ingest.publish_every_seconds": 0.0,
            "ingest.tokenize_ahead": False,  # the same write phase in both arms, no worker beside
        }
    )
    engine = Engine(settings)
    plan: list[tuple[str, int]] = []
    began: list[float] = []
    marks: list[tuple[float, int]] = []

    def recording(store, todo, order, never=()):  # type: ignore[no-untyped-def]
        chosen, skipped = (
            ordered_todo(store, todo, order, never) if arm == "roles" else (list(todo.items()), {})
        )
        plan.extend(chosen)
        began.append(time.perf_counter())
        return chosen, skipped

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "embed" and began:
            marks.append((time.perf_counter() - began[0], done))

    def stop() -> bool:
        return bool(began) and time.perf_counter() - began[0] > budget

    original = fill.ordered_todo
    fill.ordered_todo = recording
    start = time.perf_counter()
    try:
        report = engine.ingest([repo], bm25_first=True, progress=progress, stop=stop)
        paths = engine.store.chunk_paths()
        root = ingested_root(*engine.store.path_bounds())
    finally:
        fill.ordered_todo = original
        engine.close()
    roles = [chunk_role(paths[cid], root) if cid in paths else SOURCE for _, cid in plan]
    total_source = sum(r == SOURCE for r in roles)
    curve = {}
    for mark in MARKS:
        done = max((n for t, n in marks if t <= mark), default=0)
        curve[str(mark)] = {
            "embedded": done,
            "source_dense": round(sum(r == SOURCE for r in roles[:done]) / max(total_source, 1), 3),
        }
    by_role: dict[str, int] = {}
    for r in roles:
        by_role[r] = by_role.get(r, 0) + 1
    first_other = next((i for i, r in enumerate(roles) if r != SOURCE), len(roles))
    return {
        "texts_to_embed": len(plan),
        "by_role": by_role,
        "source_texts": total_source,
        "write_phase_s": round(began[0] - start, 1) if began else None,
        "embedded_in_budget": marks[-1][1] if marks else 0,
        "chunks_per_s": round(marks[-1][1] / marks[-1][0], 2) if marks else None,
        "all_source_dense_s": next(
            (round(t, 1) for t, n in marks if n >= first_other and first_other < len(roles)), None
        )
        if arm == "roles"
        else None,
        "curve": curve,
        "interrupted": report.interrupted,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    repo = Path(args.repo).resolve()
    work = Path(args.work)
    result: dict[str, Any] = {"repo": str(repo.relative_to(ROOT) if repo.is_relative_to(ROOT) else repo)}
    result["budget_s"] = args.budget
    for arm in args.arms:
        print(f"# arm {arm}: load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        result[arm] = run_arm(repo, work / arm, arm, args.budget)
        result[arm]["load_after"] = round(os.getloadavg()[0], 1)
    shutil.rmtree(work, ignore_errors=True)
    return result


def render(result: dict[str, Any]) -> str:
    """The share of source chunks with a vector by time, the role order against the store's."""
    arms = [a for a in ("roles", "stored") if isinstance(result.get(a), dict)]
    times = sorted({int(t) for a in arms for t in result[a]["curve"]}, key=int)
    names = {"roles": "role order (source first)", "stored": "store order (before)"}
    lines = [
        f"Source chunks with a vector, by seconds of embedding ({result.get('repo')}, budget "
        f"{result.get('budget_s')} s):",
        "",
        "| order | " + " | ".join(f"{t} s" for t in times) + " | chunks/s |",
        "|---|" + "---:|" * (len(times) + 1),
    ]
    for arm in arms:
        curve = result[arm]["curve"]
        cells = [f"{curve[str(t)]['source_dense']:.1%}" if str(t) in curve else "–" for t in times]
        lines.append(f"| {names[arm]} | " + " | ".join(cells) + f" | {result[arm]['chunks_per_s']} |")
    return "\n".join(lines) + "\n"
