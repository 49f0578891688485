"""Issue 31's cases for ``fault_probe``: near-duplicates, an interrupted delete, the data dir named
to ingest, a date at the end of the calendar, a truncated store. Each runs the real CLI as a user
would on a fresh data dir (``fault_probe.Probe``) and says what was lost or stale afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

# the CLI with the index build replaced by a kill -9: the exact point between a delete's store
# commit and its publication
KILL_BEFORE_PUBLISH = (
    "import os, signal, sys\n"
    "from hybrid_rag import cli\n"
    "from hybrid_rag.indices.build import IndexBuilder\n"
    "IndexBuilder.build = lambda self, **kw: os.kill(os.getpid(), signal.SIGKILL)\n"
    "sys.exit(cli.main(sys.argv[1:]))\n"
)


def _finds(probe: Any, text: str, name: str) -> bool:
    found = subprocess.run(
        probe.command("query", text, "--json", "--mode", "bm25"),
        capture_output=True,
        text=True,
        env=probe.env,
        timeout=600,
    )
    return found.returncode == 0 and name in found.stdout


def _row(fault: str, steps: list[dict[str, Any]], problems: list[str]) -> dict[str, Any]:
    return {"fault": fault, "item": "31", "steps": steps, "audit": {"lost": "; ".join(problems) or "nothing"}}


def near_duplicate(probe: Any) -> dict[str, Any]:
    shutil.copy(probe.corpus / "note0003.md", probe.corpus / "copy.md")
    steps = [probe.run("ingest", str(probe.corpus))]
    steps.append(probe.run("delete", str(probe.corpus / "note0003.md")))
    problems = [] if _finds(probe, "entry3x5 glaciers", "copy.md") else ["copy.md's text is not found"]
    return _row("a near-duplicate's original deleted (`delete a.md`)", steps, problems)


def killed_delete(probe: Any, target: str) -> subprocess.CompletedProcess[str]:
    """``delete target`` killed (-9) after its store commit, before it publishes a version."""
    return subprocess.run(
        [sys.executable, "-c", KILL_BEFORE_PUBLISH, "--data-dir", str(probe.data), "delete", target],
        capture_output=True,
        text=True,
        env=probe.env,
        timeout=600,
    )


def interrupted_delete(probe: Any) -> dict[str, Any]:
    target = str(probe.corpus / "note0002.md")
    killed = killed_delete(probe, target)
    steps = [{"cmd": "delete (kill -9 before publishing)", "exit": killed.returncode, "says": ""}]
    served_after_kill = _finds(probe, "entry2x5", "note0002.md")
    steps.append(probe.run("delete", target))
    problems = ["the deleted file is still served"] if _finds(probe, "entry2x5", "note0002.md") else []
    if not served_after_kill:
        problems.append("(the kill did not leave it served)")
    return _row("kill -9 of `delete` between its store commit and its publication", steps, problems)


def data_dir_named(probe: Any) -> dict[str, Any]:
    (probe.data / "api_keys").write_text("sk-probe-swordfish\n")
    steps = [probe.run("ingest", str(probe.data / "api_keys"))]
    problems = ["the API keys are searchable"] if _finds(probe, "swordfish", "api_keys") else []
    return _row("`ingest data/api_keys` (the data dir named)", steps, problems)


def calendar_end(probe: Any) -> dict[str, Any]:
    steps = [probe.run("query", "glaciers", "--filter", "mtime<9999-12-31")]
    steps.append(probe.run("query", "glaciers", "--filter", "mtime>0001-01-01T00:00+05:00"))
    problems = [f"exit {s['exit']}" for s in steps if s["exit"] not in (0, 2)]
    return _row("`--filter 'mtime<9999-12-31'`, and a date out of range in UTC", steps, problems)


def truncated_store(probe: Any, files: int) -> dict[str, Any]:
    store = probe.data / "store.sqlite3"
    os.truncate(store, store.stat().st_size // 2)
    for name in ("store.sqlite3-wal", "store.sqlite3-shm"):
        (probe.data / name).unlink(missing_ok=True)
    steps = [probe.run("stats")]
    shutil.move(probe.data, probe.work / "damaged")  # the way back the message names
    steps.append({**probe.run("ingest", str(probe.corpus)), "cmd": "(data dir moved aside) ingest"})
    counted = subprocess.run(
        probe.command("stats", "--json"), capture_output=True, text=True, env=probe.env, timeout=600
    )
    documents = json.loads(counted.stdout)["documents"] if counted.returncode == 0 else 0
    problems = [] if documents == files else [f"{files - documents} of {files} documents missing"]
    return _row("`store.sqlite3` truncated to half", steps, problems)


def trials(fresh: Any, base: Path, files: int) -> list[dict[str, Any]]:
    """Each case on its own fresh data dir (``fresh(base, name, files)`` ingests the corpus)."""
    return [
        near_duplicate(fresh(base, "near-duplicate", files)),
        interrupted_delete(fresh(base, "interrupted-delete", files)),
        data_dir_named(fresh(base, "data-dir-named", files)),
        calendar_end(fresh(base, "calendar-end", files)),
        truncated_store(fresh(base, "truncated-store", files), files),
    ]
