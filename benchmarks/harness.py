"""Run a benchmark study and keep its JSON; render every study's section of RESULTS.md from JSON.

A study is a module ``benchmarks/studies/<name>.py`` with three functions, and nothing else to
know about running or reporting:

    def add_arguments(parser: argparse.ArgumentParser) -> None   # optional: its own flags
    def run(args: argparse.Namespace) -> dict                     # measures; progress on stderr only
    def render(result: dict) -> str                               # markdown, from the JSON alone

    .venv/bin/python benchmarks/harness.py run NAME [study flags]   # -> benchmarks/results/NAME.json
    .venv/bin/python benchmarks/harness.py run NAME --out /tmp/x.json [study flags]   # a trial run
    .venv/bin/python benchmarks/harness.py report [NAME ...]        # -> RESULTS.md, every study by default

``run`` adds ``environment`` (cores, CPU, RAM, load average before and after, library versions,
the commit and whether the tree was dirty, the date, the command) to what the study returns, so
the report can state the machine and the load of every figure. ``report`` replaces the text
between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in RESULTS.md with ``render(result)``;
the headings and prose outside the markers are kept as they are, and a study whose markers are
missing gets them appended at the end of the file. Timed studies should run one at a time on an
idle machine: ``flock /tmp/hybrid-rag-bench.lock .venv/bin/python benchmarks/harness.py run …``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
STUDIES = BENCHMARKS / "studies"
RESULTS = BENCHMARKS / "results"
DOCUMENT = BENCHMARKS / "RESULTS.md"
for entry in (str(ROOT), str(BENCHMARKS)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from hybrid_rag.evaluation.bench import git_info, machine_info  # noqa: E402
from hybrid_rag.models.auto import models_used  # noqa: E402


def study_names() -> list[str]:
    return sorted(p.stem for p in STUDIES.glob("*.py") if not p.stem.startswith("_"))


def load_study(name: str) -> ModuleType:
    if name not in study_names():
        raise SystemExit(f"no study {name!r} in {STUDIES} (studies: {', '.join(study_names())})")
    return importlib.import_module(f"studies.{name}")


def result_path(name: str) -> Path:
    return RESULTS / f"{name}.json"


def write_result(name: str, result: dict[str, Any], path: Path | None = None) -> Path:
    """Compact JSON (no indentation): committed results stay small; ``jq`` reads them."""
    path = path or result_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, separators=(",", ":"), sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


def read_result(name: str) -> dict[str, Any] | None:
    path = result_path(name)
    return json.loads(path.read_text()) if path.exists() else None


def run_study(name: str, argv: Sequence[str]) -> Path:
    study = load_study(name)
    parser = argparse.ArgumentParser(prog=f"harness.py run {name}", description=(study.__doc__ or "").strip())
    parser.add_argument(
        "--out", type=Path, help=f"write the JSON here instead of {result_path(name).relative_to(ROOT)}"
    )
    if hasattr(study, "add_arguments"):
        study.add_arguments(parser)
    args = parser.parse_args(list(argv))
    load_before = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    result = study.run(args)
    models = models_used()  # every embedder the study built, auto's choices resolved as ingest does
    print("# embedding models used: " + (describe_models(models) or "none"), file=sys.stderr)
    environment = {
        **machine_info(),
        "load_average_before": load_before,
        "git": git_info(ROOT),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "command": f"benchmarks/harness.py run {name} {' '.join(argv)}".strip(),
        "seconds": round(time.perf_counter() - started, 1),
        "embedding_models": models,
    }
    return write_result(name, {**result, "environment": environment}, args.out)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_block(document: str, name: str, body: str) -> str:
    """``document`` with the text between ``name``'s markers replaced by ``body`` (the markers and
    the body are appended when absent); everything outside the markers is kept byte for byte."""
    begin, end = markers(name)
    block = f"{begin}\n{body.strip()}\n{end}"
    start, stop = document.find(begin), document.find(end)
    if start == -1 or stop == -1 or stop < start:
        if begin in document or end in document:
            raise ValueError(f"{DOCUMENT.name}: unbalanced {begin} / {end} markers; fix them by hand")
        return document.rstrip("\n") + ("\n\n" if document.strip() else "") + block + "\n"
    return document[:start] + block + document[stop + len(end) :]


def describe_models(models: dict[str, str]) -> str:
    """``{"multilingual-e5-small": "embedding.model auto: ..."}`` as one line."""
    return "; ".join(f"{name} ({how})" if how else name for name, how in models.items())


def environment_line(result: dict[str, Any]) -> str:
    """One line stating where and when a result was measured, for every rendered section; what an
    older result did not record is left out."""
    env = result.get("environment") or {}
    if not env:
        return "_Machine not recorded._"
    git = env.get("git") or {}
    cpu = ", ".join(filter(None, (env.get("cpu_model") or "CPU ?", env.get("cpu_simd"))))
    where = f"{env.get('cores', '?')} cores ({cpu})"
    if env.get("ram_bytes"):
        where += f", {env['ram_bytes'] / 2**30:.0f} GiB"
    parts = ["_Measured" + (f" {env['date']}" if env.get("date") else "")]
    if git.get("commit"):
        parts.append(f" at commit {git['commit'][:7]}{' (uncommitted changes)' if git.get('dirty') else ''}")
    parts.append(f": {where}")
    before, after = env.get("load_average_before"), env.get("load_average")
    if before or after:
        parts.append(f", load average {(before or ['?'])[0]} before and {(after or ['?'])[0]} after")
    if env.get("seconds") is not None:
        parts.append(f", {env['seconds']} s")
    if env.get("embedding_models"):
        parts.append(f"; embedding model(s): {describe_models(env['embedding_models'])}")
    if env.get("command"):
        parts.append(f": `{env['command']}`")
    return "".join(parts) + "._"


def report(names: Sequence[str]) -> list[str]:
    document = DOCUMENT.read_text() if DOCUMENT.exists() else "# Results\n"
    done = []
    for name in names:
        result = read_result(name)
        if result is None:
            print(f"{name}: no {result_path(name).relative_to(ROOT)}; run it first", file=sys.stderr)
            continue
        body = load_study(name).render(result)
        document = replace_block(document, name, f"{body.rstrip()}\n\n{environment_line(result)}")
        done.append(name)
    DOCUMENT.write_text(document)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("run", "report", "list"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "list":
        print("\n".join(study_names()))
        return 0
    if argv[0] == "run":
        if len(argv) < 2:
            raise SystemExit("usage: harness.py run NAME [study flags]")
        print(run_study(argv[1], argv[2:]))
        return 0
    done = report(argv[1:] or study_names())
    print(f"rendered into {DOCUMENT.relative_to(ROOT)}: {', '.join(done) or 'nothing'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
