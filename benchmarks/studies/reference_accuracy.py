"""References, callers and impact (issue 40): accuracy against jedi, ingest cost, query latency.

* **accuracy**: for a seeded sample of the functions, methods and classes of small Python
  projects (sdists from PyPI: ``pip download --no-binary :all: --no-deps``), the uses ``refs``
  resolves to the definition and the call sites ``callers`` finds, against jedi's
  ``get_references`` (project scope) at the definition's name. A use is a (file, line); the
  definition's own line is left out on both sides. jedi's calls are its references followed by
  ``(`` or after ``@``. Precision and recall are micro-averaged over the sample; ambiguous uses
  (kept with their candidates, never resolved) are counted apart and left out of precision.
* **ingest cost**: each project ingested into a fresh data dir, in a fresh process, with the
  deterministic fake embedder (so the figure is parsing and storing alone, the worst case for
  the ratio): ``before`` the parent commit's code (``--base``: ``git archive PARENT hybrid_rag
  configs``), ``parsed`` this code with ``file_references`` returning nothing (the query's
  reference patterns run, nothing is stored), ``with`` this code; interleaved, median of
  ``--repeats``.
* **latency**: ``Engine.references("callers", name)`` for each sampled name, warm, median and p95.

    nice -n 10 .venv/bin/python benchmarks/harness.py run reference_accuracy \\
        --sdists /tmp/sdists --jedi /tmp/jedi --base /tmp/base
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from studies.suite import log

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = ("click-8.1.7", "more-itertools-10.5.0", "pluggy-1.5.0")
KINDS = {"function", "method", "class"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sdists", required=True, help="a folder with the projects' .tar.gz sdists")
    p.add_argument("--jedi", required=True, help="a folder jedi is installed in (pip install --target)")
    p.add_argument("--sample", type=int, default=80, help="definitions per project")
    p.add_argument("--repeats", type=int, default=3, help="ingests per variant for the timing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base", required=True, help="a folder with the parent commit's hybrid_rag (git archive)")


def _unpack(sdists: Path, name: str, into: Path) -> Path:
    with tarfile.open(sdists / f"{name}.tar.gz") as tar:
        tar.extractall(into, filter="data")
    return into / name


def _engine(data: Path) -> Any:
    from hybrid_rag.engine import Engine
    from hybrid_rag.settings import Settings

    settings = Settings().with_overrides({"paths.data_dir": str(data), "embedding.model": "fake"})
    return Engine(settings)


def _name_positions(path: Path) -> dict[int, tuple[str, int]]:
    """def/class line -> (name, column of the name), by ``ast``."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out: dict[int, tuple[str, int]] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            line = lines[node.lineno - 1]
            word = "class " if isinstance(node, ast.ClassDef) else "def "
            col = line.find(word + node.name)
            if col >= 0:
                out[node.lineno] = (node.name, col + len(word))
    return out


def _is_call(lines: list[str], line: int, column: int, name: str) -> bool:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    after = text[column + len(name) :].lstrip()
    before = text[:column].rstrip()
    return after.startswith("(") or (before.endswith("@") and not after.startswith("."))


def _accuracy(root: Path, engine: Any, jedi: Any, sample: int, seed: int) -> dict[str, Any]:
    from hybrid_rag.symbols.references import AMBIGUOUS, CALLS, RESOLVED, Resolver

    store = engine.store
    symbols = [s for s in store.symbols() if s.kind in KINDS and s.language == "python"]
    symbols = [s for s in symbols if not (s.name.startswith("__") and s.name.endswith("__"))]
    symbols = [s for s in symbols if s.path.endswith(".py")]  # jedi answers with the source, not stubs
    random.Random(seed).shuffle(symbols)
    src = [str(root / "src")] if (root / "src").is_dir() else []
    project = jedi.Project(str(root), added_sys_path=src)  # a src/ layout: its package, not an installed one
    texts: dict[str, list[str]] = {}
    counts = {k: 0 for k in ("refs_tp", "refs_p", "refs_t", "calls_tp", "calls_p", "calls_t", "ambiguous")}
    latencies: list[float] = []
    jedi_seconds: list[float] = []
    misses: list[str] = []
    checked = 0
    for symbol in symbols:
        if checked >= sample:
            break
        path = Path(symbol.path)
        positions = _name_positions(path)
        found = [(ln, nc) for ln, nc in positions.items() if symbol.start_line <= ln <= symbol.end_line]
        found = [(ln, nc) for ln, nc in found if nc[0] == symbol.name]
        if not found:
            continue
        line, (name, column) = min(found)
        t = time.perf_counter()
        script = jedi.Script(path=str(path), project=project)
        try:
            truth_names = script.get_references(line, column, scope="project", include_builtins=False)
        except Exception as exc:  # jedi's own failure: the definition is left out
            log(f"jedi failed on {symbol.qualified_name}: {exc}")
            continue
        jedi_seconds.append(time.perf_counter() - t)
        checked += 1
        truth, truth_calls = set(), set()
        for n in truth_names:
            where = str(n.module_path or "")
            if not where.endswith(".py") or (where == symbol.path and n.line == line):
                continue
            truth.add((where, n.line))
            lines = texts.setdefault(where, Path(where).read_text(encoding="utf-8").splitlines())
            if _is_call(lines, n.line, n.column, name):
                truth_calls.add((where, n.line))
        t = time.perf_counter()
        engine.references("callers", symbol.qualified_name)
        latencies.append((time.perf_counter() - t) * 1000)
        resolver = Resolver(store, None)
        uses = resolver.resolve(store.references(names=[symbol.name]))
        uses = [u for u in uses if u.reference.path.endswith(".py")]  # as jedi's (no stubs)
        mine = {u for u in uses if u.status == RESOLVED and u.targets[0].id == symbol.id}
        counts["ambiguous"] += sum(
            1 for u in uses if u.status == AMBIGUOUS and any(x.id == symbol.id for x in u.targets)
        )
        refs = {(u.reference.path, u.reference.line) for u in mine}
        calls = {(u.reference.path, u.reference.line) for u in mine if u.reference.kind in CALLS}
        refs.discard((symbol.path, line))
        calls.discard((symbol.path, line))
        counts["refs_tp"] += len(refs & truth)
        counts["refs_p"] += len(refs)
        counts["refs_t"] += len(truth)
        counts["calls_tp"] += len(calls & truth_calls)
        counts["calls_p"] += len(calls)
        counts["calls_t"] += len(truth_calls)
        for where, ln in sorted(refs - truth)[:40]:
            if len(misses) < 60:
                misses.append(f"extra {symbol.qualified_name} at {Path(where).name}:{ln}")
        for where, ln in sorted(truth - refs)[:40]:
            if len(misses) < 120:
                misses.append(f"missed {symbol.qualified_name} at {Path(where).name}:{ln}")
    return {
        "definitions": checked,
        **counts,
        "callers_ms_median": statistics.median(latencies) if latencies else None,
        "callers_ms_p95": sorted(latencies)[int(0.95 * (len(latencies) - 1))] if latencies else None,
        "jedi_s_median": statistics.median(jedi_seconds) if jedi_seconds else None,
        "examples": misses,
    }


_TIMED = """
import sys, tempfile, time
from pathlib import Path
from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings
if sys.argv[2] == "unstored":
    import hybrid_rag.ingest.pipeline as pipeline
    pipeline.file_references = lambda f, found=None: []
with tempfile.TemporaryDirectory() as tmp:
    settings = Settings().with_overrides({"paths.data_dir": tmp + "/data", "embedding.model": "fake"})
    engine = Engine(settings)
    t = time.perf_counter()
    report = engine.ingest([Path(sys.argv[1])])
    seconds = time.perf_counter() - t
    refs = engine.store.reference_count() if hasattr(engine.store, "reference_count") else 0
    print(seconds, report.chunks_written, refs)
"""
VARIANTS = ("before", "unstored", "with")  # the parent commit; references parsed, not stored; stored


def _ingest_seconds(root: Path, variant: str, base: str) -> tuple[float, int, int]:
    """One ingest in a fresh process: ``before`` runs the code of ``base`` (a folder holding the
    parent commit's ``hybrid_rag``), the others this tree's."""
    env = {**os.environ, "PYTHONPATH": base if variant == "before" else str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _TIMED, str(root), variant],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, chunks, refs = out.stdout.split()[-3:]
    return float(seconds), int(chunks), int(refs)


def run(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, args.jedi)
    import jedi

    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in PROJECTS:
            root = _unpack(Path(args.sdists), name, Path(work))
            log(f"{name}: timing ingests")
            timings: dict[str, list[float]] = {v: [] for v in VARIANTS}
            chunks = refs = 0
            for _ in range(args.repeats):
                for variant in VARIANTS:
                    seconds, chunks, found = _ingest_seconds(root, variant, args.base)
                    timings[variant].append(seconds)
                    refs = max(refs, found)
            log(f"{name}: accuracy against jedi")
            engine = _engine(Path(work) / f"{name}-data")
            engine.ingest([root])
            accuracy = _accuracy(root, engine, jedi, args.sample, args.seed)
            engine.close()
            rows.append(
                {
                    "project": name,
                    "files": sum(1 for _ in root.rglob("*.py")),
                    "chunks": chunks,
                    "references": refs,
                    **{f"ingest_s_{v}": statistics.median(timings[v]) for v in VARIANTS},
                    **accuracy,
                }
            )
    return {"projects": rows, "jedi": jedi.__version__, "sample": args.sample, "repeats": args.repeats}


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "-"


def render(result: dict[str, Any]) -> str:
    lines = [
        "| project | .py files | chunks | references | defs checked | refs P | refs R | callers P "
        "| callers R | ambiguous | ingest s before / parsed / stored | ratio | callers ms median / p95 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    total = {k: 0 for k in ("refs_tp", "refs_p", "refs_t", "calls_tp", "calls_p", "calls_t")}
    for r in result["projects"]:
        for k in total:
            total[k] += r[k]
        lines.append(
            f"| {r['project']} | {r['files']} | {r['chunks']} | {r['references']} | {r['definitions']} "
            f"| {_ratio(r['refs_tp'], r['refs_p'])} | {_ratio(r['refs_tp'], r['refs_t'])} "
            f"| {_ratio(r['calls_tp'], r['calls_p'])} | {_ratio(r['calls_tp'], r['calls_t'])} "
            f"| {r['ambiguous']} | {r['ingest_s_before']:.2f} / {r['ingest_s_unstored']:.2f} / "
            f"{r['ingest_s_with']:.2f} | {r['ingest_s_with'] / r['ingest_s_before']:.3f}x "
            f"| {r['callers_ms_median']:.1f} / {r['callers_ms_p95']:.1f} |"
        )
    lines.append(
        f"| **all** | | | | | {_ratio(total['refs_tp'], total['refs_p'])} | "
        f"{_ratio(total['refs_tp'], total['refs_t'])} | {_ratio(total['calls_tp'], total['calls_p'])} | "
        f"{_ratio(total['calls_tp'], total['calls_t'])} | | | | |"
    )
    lines.append("")
    lines.append(
        f"jedi {result['jedi']} (project scope) is the reference; {result['sample']} definitions a project "
        f"at most (seeded), ingests the median of {result['repeats']} with the fake embedder."
    )
    examples = [e for r in result["projects"] for e in r["examples"][:6]]
    if examples:
        lines.append("")
        lines.append("Disagreements, first of each project: " + "; ".join(f"`{e}`" for e in examples) + ".")
    return "\n".join(lines)
