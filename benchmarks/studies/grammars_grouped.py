"""Issue 37, items 2 and 3: the grammars added, what each file yields and costs; results by file.

Two parts, both from the engine's own functions:

* **grammars**: each file of ``tests/fixtures/grammars/`` (one per added language; SOURCES.md says
  where each comes from) through ``extract_units``, ``--repeat`` times with the parse cache
  cleared: the wheel and its version, the file's size, its units by kind, the median parse time;
* **grouping**: hybrid-rag's own package (``hybrid_rag/``, ingested with the default model or
  ``--model``) asked ``--questions`` "where is X handled" questions written for this study, each
  as a chunk list (``top_k`` 10) and grouped by file (``group="file"``, 10 files): how many
  distinct files the chunk list holds, how many chunks its most frequent file takes, and the
  query time of each (median of ``--repeat`` runs, the engine warm). No judgements: the part says
  what the lists hold and cost, not which is right.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run grammars_grouped
    .venv/bin/python benchmarks/harness.py report grammars_grouped
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hybrid_rag.code import extract
from hybrid_rag.code.extract import extract_units
from hybrid_rag.code.grammars import grammar_for_path, wheel_version
from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings
from studies.suite import log

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "grammars"
QUESTIONS = (  # written for this study by reading hybrid_rag/ (no judged set)
    "where are API keys checked for a request",
    "how is the live index version swapped atomically",
    "where is the filter language parsed",
    "how are BM25 segments merged",
    "where is a stale file detected after ingest",
    "how is a query written to the query log",
    "where is the embedding cache looked up",
    "how are near duplicate chunks removed",
    "where is the context token budget enforced",
    "how are path priors applied to the ranking",
    "how are tree-sitter grammars loaded",
    "where are the fusion weights of code chunks chosen",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=7, help="runs of each parse and query (median)")
    p.add_argument(
        "--model", default=None, help="embedding.model for the grouping part (default: the default)"
    )
    p.add_argument("--questions", type=int, default=len(QUESTIONS))


def grammars(repeat: int) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(p for p in FIXTURES.iterdir() if p.suffix != ".md"):
        grammar = grammar_for_path(path.name)
        text = path.read_text(encoding="utf-8")
        times, units = [], []
        for _ in range(repeat):
            extract._best.cache_clear()
            t = time.perf_counter()
            units = extract_units(str(path), text) or []
            times.append(time.perf_counter() - t)
        rows.append(
            {
                "language": grammar.language if grammar else "?",
                "wheel": grammar.module.replace("_", "-") if grammar else "",
                "version": wheel_version(grammar) if grammar else None,
                "file": path.name,
                "lines": text.count("\n") + 1,
                "bytes": len(text.encode()),
                "units": len(units),
                "kinds": dict(sorted(Counter(u.kind for u in units).items())),
                "parse_ms": statistics.median(times) * 1000,
            }
        )
    return rows


def _timed(repeat: int, fn: Any) -> tuple[Any, float]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return result, statistics.median(times) * 1000


def grouping(repeat: int, model: str | None, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        overrides: dict[str, Any] = {"paths.data_dir": str(Path(tmp) / "data")}
        if model:
            overrides["embedding.model"] = model
        engine = Engine(Settings().with_overrides(overrides))
        t = time.perf_counter()
        report = engine.ingest([ROOT / "hybrid_rag"])
        ingest_s = time.perf_counter() - t
        log(f"ingested hybrid_rag/ in {ingest_s:.0f} s")
        rows = []
        try:
            for question in QUESTIONS[:count]:
                chunks, chunk_ms = _timed(repeat, lambda q=question: engine.query(q, top_k=10))
                files, file_ms = _timed(repeat, lambda q=question: engine.query(q, top_k=10, group="file"))
                paths = Counter(c.path for c in chunks.chunks)
                rows.append(
                    {
                        "question": question,
                        "chunk_files": len(paths),
                        "top_file_chunks": max(paths.values()) if paths else 0,
                        "files": len(files.files),
                        "units": sum(len(f.units) for f in files.files),
                        "first_file_same": bool(chunks.chunks)
                        and bool(files.files)
                        and chunks.chunks[0].path == files.files[0].path,
                        "chunk_ms": chunk_ms,
                        "file_ms": file_ms,
                    }
                )
                log(f"{question}: {len(paths)} files in the chunk list; {chunk_ms:.0f} / {file_ms:.0f} ms")
        finally:
            model_name = engine.embedder.model_name
            engine.close()
    return {"model": model_name, "chunks": report.chunks_written, "ingest_s": ingest_s, "rows": rows}


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "repeat": args.repeat,
        "grammars": grammars(args.repeat),
        "grouping": grouping(args.repeat, args.model, args.questions),
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        "| language | wheel | file | lines | units | kinds | parse ms (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["grammars"]:
        kinds = ", ".join(f"{k} {n}" for k, n in r["kinds"].items())
        lines.append(
            f"| {r['language']} | {r['wheel']} {r['version']} | `{r['file']}` | {r['lines']} | "
            f"{r['units']} | {kinds} | {r['parse_ms']:.2f} |"
        )
    g = result["grouping"]
    rows = g["rows"]
    lines += [
        "",
        f"Grouping: hybrid_rag/ ingested with {g['model']} ({g['chunks']} chunks, {g['ingest_s']:.0f} s), "
        f"{len(rows)} questions, median of {result['repeat']} runs each:",
        "",
        "| question | files in the 10 chunks | chunks of its top file | files grouped | units shown "
        "| same first file | chunk list ms | grouped ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['question']} | {r['chunk_files']} | {r['top_file_chunks']} | {r['files']} | "
            f"{r['units']} | {'yes' if r['first_file_same'] else 'no'} | {r['chunk_ms']:.0f} | "
            f"{r['file_ms']:.0f} |"
        )
    if rows:
        med = {k: statistics.median(r[k] for r in rows) for k in ("chunk_files", "top_file_chunks", "files")}
        ms = {k: statistics.median(r[k] for r in rows) for k in ("units", "chunk_ms", "file_ms")}
        same = sum(r["first_file_same"] for r in rows)
        lines.append(
            f"| **median** | {med['chunk_files']:g} | {med['top_file_chunks']:g} | {med['files']:g} | "
            f"{ms['units']:g} | {same}/{len(rows)} | {ms['chunk_ms']:.0f} | {ms['file_ms']:.0f} |"
        )
    return "\n".join(lines)
