"""Issue 43's CLI-reachable faults of items 4, 10, 14, 15 and 16 for ``fault_probe`` (``--parts
issue43``). Each runs the real CLI on a fresh data dir (``fault_probe.Probe``), every command timed
with its peak memory (the process's maximum resident set), and says what was lost or wrong after.
Items 9 (a shared PostgreSQL store), 11 (HTTP uploads) and 13 (``auto`` with the real models) need
a server or the models: their tests cover them (RESULTS.md#hostile-input-round-three)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# the CLI in a process that reports its peak memory (KiB on Linux) on its last stderr line
MEASURED = (
    "import resource, sys\n"
    "from hybrid_rag import cli\n"
    "try:\n"
    "    code = cli.main(sys.argv[1:])\n"
    "finally:\n"
    "    print(f'peak-kib {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)
# the same, with faiss's write failing as it does on a full disk (after the store's commit)
FAISS_FULL = (
    "import faiss\n"
    "def full(*a):\n"
    '    raise RuntimeError("Error in void faiss::write_index(const Index*, IOWriter*, int): '
    "Error: 'ret == (size * 4)' failed: write error: 4051 != 32000 (No space left on device)\")\n"
    "faiss.write_index = full\n"
) + MEASURED
# a BM25-first ingest stopped (as by Ctrl-C) once its BM25 version is live, the vectors still to come
STOPPED_BM25_FIRST = (
    "import sys\n"
    "from hybrid_rag.engine import Engine\n"
    "from hybrid_rag.settings import load_settings\n"
    "engine = Engine(load_settings(None, data_dir=sys.argv[1]))\n"
    "seen = []\n"
    "report = engine.ingest([sys.argv[2]], bm25_first=True,\n"
    "    progress=lambda s, d, t: seen.append(s) if s == 'searchable' else None, stop=lambda: bool(seen))\n"
    "engine.close()\n"
    "print(report.interrupted, report.build is not None)\n"
)


def timed(probe: Any, *args: str, script: str = MEASURED, label: str | None = None) -> dict[str, Any]:
    """One CLI command: exit code, first stderr line, wall seconds, peak MiB."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script, "--data-dir", str(probe.data), *args],
        capture_output=True,
        text=True,
        env=probe.env,
        timeout=1800,
    )
    seconds = time.perf_counter() - start
    lines = done.stderr.splitlines()
    peak = next((int(x.split()[1]) for x in reversed(lines) if x.startswith("peak-kib ")), 0)
    said = "\n".join(x for x in lines if not x.startswith("peak-kib "))
    return {
        "cmd": label or args[0],
        "exit": done.returncode,
        "says": probe.first_line(said),
        "seconds": round(seconds, 2),
        "peak_mb": round(peak / 1024, 1),
        "stdout": done.stdout,
    }


def _finds(probe: Any, text: str, name: str) -> bool:
    found = timed(probe, "query", text, "--json", "--mode", "bm25")
    return found["exit"] == 0 and name in found["stdout"]


def _row(fault: str, steps: list[dict[str, Any]], problems: list[str]) -> dict[str, Any]:
    for step in steps:
        step.pop("stdout", None)
    return {"fault": fault, "item": "43", "steps": steps, "audit": {"lost": "; ".join(problems) or "nothing"}}


def expensive_filter(probe: Any) -> dict[str, Any]:
    """Item 4: the probe's 4,999 `meta.` comparisons (74 KB, within every limit before)."""
    probe_filter = " and ".join(f"meta.k{i} != v{i}" for i in range(4999))
    steps = [timed(probe, "query", "glaciers", "--filter", probe_filter)]
    problems = [] if steps[0]["exit"] == 2 and steps[0]["seconds"] < 30 else ["the filter ran"]
    return _row("4,999 `meta.` comparisons in one filter (74 KB)", steps, problems)


def rollback_then_delete(probe: Any) -> dict[str, Any]:
    """Item 10: a file only newer versions hold, deleted after `rollback 1`."""
    (probe.corpus / "late.md").write_text("# Late\n\nA late note about penguins entrylate.\n")
    steps = [timed(probe, "ingest", str(probe.corpus)), timed(probe, "rollback", "1")]
    steps.append(timed(probe, "delete", str(probe.corpus / "late.md")))
    (probe.corpus / "late.md").unlink()
    steps.append(timed(probe, "ingest", str(probe.corpus)))
    problems = ["late.md came back"] if _finds(probe, "penguins entrylate", "late.md") else []
    docs = timed(probe, "documents", "--json")
    if docs["exit"] != 0 or any(not r["languages"] for r in json.loads(docs["stdout"])["documents"]):
        problems.append("a document without its languages")
    return _row("`rollback 1`, then `delete` of a file only v2 holds", steps, problems)


def faiss_disk_full(probe: Any) -> dict[str, Any]:
    """Item 14: the disk fills while faiss writes the index, after the store's commit."""
    (probe.corpus / "more.md").write_text("# More\n\nAnother note about glaciers entrymore.\n")
    steps = [timed(probe, "ingest", str(probe.corpus), script=FAISS_FULL, label="ingest (faiss: disk full)")]
    steps.append(timed(probe, "ingest", str(probe.corpus), label="(space again) ingest"))
    problems = [] if _finds(probe, "glaciers entrymore", "more.md") else ["more.md is not found"]
    if steps[0]["exit"] != 2:
        problems.append(f"exit {steps[0]['exit']}")
    return _row("the disk fills while faiss writes the index (after the store's commit)", steps, problems)


def stats_after_bm25_first(probe: Any) -> dict[str, Any]:
    """Item 15: `stats` after a BM25-first ingest stopped while its vectors filled in."""
    more = probe.work / "more"
    more.mkdir()
    for i in range(200):
        (more / f"m{i:03d}.md").write_text(f"# M {i}\n\nglaciers moraine entrym{i} " * 20 + "\n")
    stopped = subprocess.run(
        [sys.executable, "-c", STOPPED_BM25_FIRST, str(probe.data), str(more)],
        capture_output=True,
        text=True,
        env=probe.env,
        timeout=1800,
    )
    before = sorted(p.name for p in (probe.data / "indices").iterdir())
    steps = [{"cmd": "ingest --bm25-first (stopped)", "exit": stopped.returncode, "says": ""}]
    steps.append(timed(probe, "stats"))
    after = sorted(p.name for p in (probe.data / "indices").iterdir())
    steps.append(timed(probe, "ingest", str(more), label="ingest (carries on)"))
    problems = ["stats wrote a version"] if after != before else []
    if not _finds(probe, "moraine entrym7", "m007.md"):
        problems.append("m007.md is not found")
    return _row("`stats` after a BM25-first ingest stopped while its vectors fill in", steps, problems)


def interrupted_delete_note(probe: Any) -> dict[str, Any]:
    """Item 16: a query after a delete killed before it published says so."""
    from studies._lost_or_stale import killed_delete

    target = str(probe.corpus / "note0002.md")
    killed = killed_delete(probe, target)
    steps = [{"cmd": "delete (kill -9 before publishing)", "exit": killed.returncode, "says": ""}]
    query = timed(probe, "query", "entry2x5", "--mode", "bm25")
    note = next((x[len("# note: ") :] for x in query["stdout"].splitlines() if "lacks the store" in x), "")
    steps.append({**query, "says": note[:220] or query["says"]})
    steps.append(timed(probe, "delete", target))
    problems = [] if note else ["no note"]
    if _finds(probe, "entry2x5", "note0002.md"):
        problems.append("the deleted file is still served")
    return _row("a query after `delete` was killed before publishing", steps, problems)


def bad_lang(probe: Any) -> dict[str, Any]:
    """Item 16: `--lang xx`."""
    steps = [timed(probe, "query", "glaciers", "--lang", "xx")]
    return _row("`query --lang xx`", steps, [] if steps[0]["exit"] == 2 else ["accepted"])


def watch_own_log(probe: Any, seconds: float = 8.0) -> dict[str, Any]:
    """Item 16: `watch corpus 2> corpus/watch.log` for a few seconds, nothing changing."""
    log = probe.corpus / "watch.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hybrid_rag.cli",
                "--data-dir",
                str(probe.data),
                "watch",
                str(probe.corpus),
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=probe.env,
        )
        time.sleep(seconds)
        proc.terminate()
        proc.wait(60)
    text = Path(log).read_text()
    ingests = sum(1 for line in text.splitlines() if " new, " in line)
    said = next((x for x in text.splitlines() if "its own output" in x), "")
    steps = [{"cmd": f"watch ({seconds:g} s, nothing changed)", "exit": proc.returncode, "says": said[:220]}]
    return _row(
        f"`watch corpus 2> corpus/watch.log`: {ingests} ingest(s) in {seconds:g} s",
        steps,
        [] if ingests <= 2 else [f"{ingests} ingests: it loops"],
    )


def trials(fresh: Any, base: Path, files: int) -> list[dict[str, Any]]:
    """Each case on its own fresh data dir (``fresh(base, name, files)`` ingests the corpus)."""
    return [
        expensive_filter(fresh(base, "expensive-filter", files)),
        rollback_then_delete(fresh(base, "rollback-delete", files)),
        faiss_disk_full(fresh(base, "faiss-full", files)),
        stats_after_bm25_first(fresh(base, "stats-bm25-first", files)),
        interrupted_delete_note(fresh(base, "delete-note", files)),
        bad_lang(fresh(base, "bad-lang", files)),
        watch_own_log(fresh(base, "watch-log", files)),
    ]
