"""Parsing code with tree-sitter: what each claimed language's file yields, and what it costs.

Two parts, both from the engine's own functions:

* **languages**: each file of ``tests/fixtures/code/`` (one small real file per claimed language)
  through ``extract_units``: the grammar wheel and its version, the units by kind, how many carry
  a doc comment;
* **projects**: every code file of ``repo_search_languages``'s pinned projects (their cached
  archives; Rust, Go, Java, JavaScript, TypeScript, C++): how many files a grammar parses (the rest
  fall back to the regex path), units and doc comments found, parse time per file; then each file
  chunked with its units and with the regex path (the same process, interleaved), and a seeded
  sample of the chunks embedded with the default model, so the cost of parsing is a share of
  ingest time per chunk.

    HF_HUB_OFFLINE=1 nice -n 5 .venv/bin/python benchmarks/harness.py run code_units
    .venv/bin/python benchmarks/harness.py report code_units
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import hybrid_rag.code.cuts as cuts
import hybrid_rag.ingest.chunking as chunking
from hybrid_rag.code.extract import extract_units
from hybrid_rag.code.grammars import grammar_for_path, wheel_version
from hybrid_rag.ingest.loaders import classify
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import Settings
from hybrid_rag.types import SourceType
from studies._repo_fetch import fetch_project
from studies.repo_search_languages import PROJECTS, SHORT, WORK
from studies.suite import log

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "code"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embed-sample", type=int, default=60, help="chunks embedded to price a chunk")
    p.add_argument("--seed", type=int, default=0)


def languages() -> list[dict[str, Any]]:
    """One row per fixture file: its grammar, the wheel's version and what it yields."""
    rows = []
    for path in sorted(FIXTURES.iterdir()):
        grammar = grammar_for_path(path.name)
        units = extract_units(str(path), path.read_text(encoding="utf-8")) or []
        rows.append(
            {
                "language": grammar.language if grammar else "?",
                "wheel": grammar.module.replace("_", "-") if grammar else "",
                "version": wheel_version(grammar) if grammar else None,
                "file": path.name,
                "units": len(units),
                "kinds": dict(sorted(Counter(u.kind for u in units).items())),
                "with_doc": sum(1 for u in units if u.doc),
                "example": next(
                    (
                        f"{u.kind} {u.qualified_name} {u.start_line}-{u.end_line}"
                        for u in units
                        if u.parent and u.doc
                    ),
                    "",
                ),
            }
        )
    return rows


def _chunk(path: str, text: str, language: str, settings: Settings, units: bool) -> tuple[list[str], float]:
    original = cuts.unit_cuts
    if not units:
        cuts.unit_cuts = lambda lines, language, path="", definitions=None: None  # the regex path alone
    try:
        t = time.perf_counter()
        spans = chunking.chunk_text(text, SourceType.CODE, language, settings.chunking, path=path)
        return [s.text for s in spans], time.perf_counter() - t
    finally:
        cuts.unit_cuts = original


def projects(settings: Settings, sample: int, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    rows, texts = [], []
    for project in PROJECTS:
        if project.language == "python":
            continue
        root, _ = fetch_project(project, WORK / "sdists")
        row = {"project": SHORT.get(project.name, project.name), "language": project.language}
        row |= {"files": 0, "parsed": 0, "units": 0, "with_doc": 0, "parse_s": 0.0, "bytes": 0}
        row |= {"chunks": 0, "chunks_regex": 0, "chunk_s": 0.0, "chunk_regex_s": 0.0}
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            source_type, language = classify(str(path))
            if source_type != SourceType.CODE or grammar_for_path(path.name) is None:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            t = time.perf_counter()
            units = extract_units(str(path), text)
            row["parse_s"] += time.perf_counter() - t
            row["files"] += 1
            row["bytes"] += len(text.encode("utf-8"))
            row["parsed"] += units is not None
            row["units"] += len(units or [])
            row["with_doc"] += sum(1 for u in units or [] if u.doc)
            chunks, seconds = _chunk(str(path), text, language, settings, units=True)
            regex, regex_seconds = _chunk(str(path), text, language, settings, units=False)
            row["chunks"] += len(chunks)
            row["chunks_regex"] += len(regex)
            row["chunk_s"] += seconds
            row["chunk_regex_s"] += regex_seconds
            texts.extend(chunks)
        log(f"code_units: {row['project']}: {row['files']} files, {row['units']} units")
        rows.append(row)
    chosen = random.Random(seed).sample(texts, min(sample, len(texts)))
    return rows, chosen


def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings()
    rows, sample = projects(settings, args.embed_sample, args.seed)
    embedder = make_embedder(settings.embedding)
    embedder.embed_passages(["warm up"])
    t = time.perf_counter()
    embedder.embed_passages(sample)
    embed_per_chunk = (time.perf_counter() - t) / max(len(sample), 1)
    return {
        "languages": languages(),
        "projects": rows,
        "embedder": embedder.model_name,
        "embed_sample": len(sample),
        "embed_s_per_chunk": embed_per_chunk,
    }


def render(result: dict[str, Any]) -> str:
    out = [
        "| language | grammar wheel | version | test file | units | kinds | with a doc comment | e.g. |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["languages"]:
        kinds = ", ".join(f"{k} {v}" for k, v in r["kinds"].items())
        out.append(
            f"| {r['language']} | {r['wheel']} | {r['version']} | `{r['file']}` | {r['units']} | {kinds} "
            f"| {r['with_doc']} | {r['example']} |"
        )
    embed = result["embed_s_per_chunk"]
    out += [
        "",
        "| project | language | files | parsed | units | with a doc comment | parse ms / file "
        "| chunk ms / chunk (units) | (regex) | chunks (units / regex) | ingest time / chunk vs regex |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["projects"]:
        per, per_regex = r["chunk_s"] / max(r["chunks"], 1), r["chunk_regex_s"] / max(r["chunks_regex"], 1)
        out.append(
            f"| {r['project']} | {r['language']} | {r['files']} | {r['parsed']} | {r['units']} "
            f"| {r['with_doc'] / max(r['units'], 1):.0%} | {1000 * r['parse_s'] / max(r['files'], 1):.1f} "
            f"| {1000 * per:.1f} | {1000 * per_regex:.1f} | {r['chunks']} / {r['chunks_regex']} "
            f"| {(per + embed) / (per_regex + embed):.3f}x |"
        )
    out.append(
        f"\nEmbedding ({result['embedder']}, {result['embed_sample']} chunks of these projects): "
        f"{1000 * embed:.0f} ms a chunk; the last column adds it to both chunking times."
    )
    return "\n".join(out)
