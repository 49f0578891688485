"""Faults: kills, concurrent writers and corruptions, each tried on a fresh data dir with the real CLI.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run fault_probe [--kills 3 --writers 5]
    .venv/bin/python benchmarks/harness.py report fault_probe       # RESULTS.md#faults

Every trial ingests a small corpus of markdown files with `hybrid-rag` processes (the fake embedder:
the faults are the engine's, not the model's), does one harm (a corrupt `CURRENT`, a damaged BM25
segment shared by two versions, a store deleted or emptied, 64 flipped bytes in a cached vector, a
full disk, a query log that cannot be written, `kill -9` during ingest / rebuild / rollback, two
ingests at once), then runs what a user would: the command that meets the fault, the recovery its
message suggests, and a query. It records what the user sees (the first line on stderr, paths
shortened), every exit code, and what was lost: documents of the corpus missing from the store, a
live index that does not index exactly the store's chunks, or a query that no longer finds its file.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from studies import _issue43_faults as issue43  # issue 43's cases (items 4, 10, 14, 15, 16)
from studies import _lost_or_stale as lost_or_stale  # issue 31's cases

ROOT = Path(__file__).resolve().parents[2]
SEGMENT = "a BM25 segment shared by two versions, damaged"
TOPICS = ["tomatoes", "compost", "swallows", "glaciers", "violins", "bridges", "lanterns", "orchards"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", type=int, default=24, help="markdown files in the corpus")
    parser.add_argument("--kill-files", type=int, default=150, help="files in the corpus the kills interrupt")
    parser.add_argument("--kills", type=int, default=3, help="kill -9 trials per command")
    parser.add_argument("--writers", type=int, default=5, help="trials of two ingests at once")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--parts",
        default="pointer,segment,store,vector,disk,kills,writers,lost_or_stale,issue43",
        help="which groups of trials to run (comma-separated)",
    )


def write_corpus(folder: Path, n: int, start: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        topic = TOPICS[i % len(TOPICS)]
        paragraphs = [
            f"Note {i}.{j} on {topic}: entry{i}x{j} records how the {topic} behaved in week {j} of year {i}."
            for j in range(12)
        ]
        (folder / f"note{i:04d}.md").write_text(f"# Note {i} about {topic}\n\n" + "\n\n".join(paragraphs))


class Probe:
    """One data dir and the corpus it ingests; runs `hybrid-rag` as a user would."""

    def __init__(self, work: Path, files: int, data: Path | None = None) -> None:
        self.work = work
        self.corpus = work / "corpus"
        self.data = data or work / "data"
        self.env = {**os.environ, "HYBRID_RAG_EMBEDDING__MODEL": "fake", "PYTHONPATH": str(ROOT)}
        write_corpus(self.corpus, files)

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(self.data), *args]

    def run(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(self.command(*args), capture_output=True, text=True, env=self.env, timeout=900)
        return {"cmd": " ".join(args[:1]), "exit": done.returncode, "says": self.first_line(done.stderr)}

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )

    def first_line(self, stderr: str) -> str:
        lines = [line for line in stderr.splitlines() if line.strip() and "Warning" not in line]
        line = lines[0] if lines else ""
        line = line.replace(str(self.data), "data").replace(str(self.corpus), "corpus")
        line = re.sub(r"/tmp/\S*?/(data|tiny)", r"\1", line)
        line = re.sub(r"\d+\.\d MiB free", "N MiB free", line)
        line = re.sub(r"\.(\d{2,7})\b", ".PID", line) if "folder." in line else line
        return line[:220]

    def audit(self, expect_docs: int, query: str = "Note 3 about glaciers entry3x5") -> dict[str, Any]:
        """What is lost: documents missing from the store, a live index that is not the store's,
        a query that does not find its file."""
        out: dict[str, Any] = {}
        try:
            db = sqlite3.connect(f"file:{self.data / 'store.sqlite3'}?mode=ro", uri=True)
            out["documents"] = db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
            out["chunks"] = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            db.close()
        except sqlite3.Error as exc:
            out["store"] = f"unreadable: {exc}"
            return out
        manifest = live_manifest(self.data / "indices")
        out["index_chunks"] = manifest.get("chunks") if manifest else None
        found = subprocess.run(
            self.command("query", query, "--json"), capture_output=True, text=True, env=self.env, timeout=600
        )
        out["query_exit"] = found.returncode
        out["query_finds_file"] = "note0003.md" in found.stdout
        out["lost"] = describe_loss(out, expect_docs)
        return out


def live_manifest(indices: Path) -> dict[str, Any] | None:
    import json

    try:
        version = int((indices / "CURRENT").read_text().strip())
        return json.loads((indices / f"v{version:06d}" / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def describe_loss(audit: dict[str, Any], expect_docs: int) -> str:
    problems = []
    if audit.get("documents", 0) < expect_docs:
        problems.append(f"{expect_docs - audit.get('documents', 0)} of {expect_docs} documents missing")
    if audit.get("index_chunks") != audit.get("chunks"):
        problems.append(f"live index {audit.get('index_chunks')} chunks, store {audit.get('chunks')}")
    if not audit.get("query_finds_file"):
        problems.append("the query misses its file")
    return "; ".join(problems) or "nothing"


def _fresh(base: Path, name: str, files: int) -> Probe:
    work = base / name
    shutil.rmtree(work, ignore_errors=True)
    probe = Probe(work, files)
    first = probe.run("ingest", str(probe.corpus))
    if first["exit"] != 0:
        raise RuntimeError(f"{name}: the first ingest failed: {first['says']}")
    return probe


def pointer_trials(base: Path, files: int) -> list[dict[str, Any]]:
    rows = []
    harms: dict[str, bytes | None] = {
        '`CURRENT` holds "abc"': b"abc",
        "`CURRENT` empty": b"",
        '`CURRENT` holds "-1"': b"-1",
        "`CURRENT` binary": b"\xff\xfe\x00\x81",
        "`CURRENT` holds 9 x 24": b"9" * 24,
        "`CURRENT` is a folder": None,
    }
    for i, (fault, raw) in enumerate(harms.items()):
        probe = _fresh(base, f"pointer{i}", files)
        pointer = probe.data / "indices" / "CURRENT"
        if raw is None:
            pointer.unlink()
            pointer.mkdir()
        else:
            pointer.write_bytes(raw)
        steps = [probe.run("query", "compost"), probe.run("rebuild")]
        rows.append({"fault": fault, "item": "25.4", "steps": steps, "audit": probe.audit(files)})
    return rows


def shared_segment_trial(base: Path, files: int) -> dict[str, Any]:
    probe = Probe(base / "segment", files)
    env = probe.env
    probe.env = {**env, "HYBRID_RAG_BM25__MERGE_FRACTION": "1.0"}  # a delta segment, not a merge
    probe.run("ingest", str(probe.corpus))
    write_corpus(probe.corpus, 1, start=files)
    probe.run("ingest", str(probe.corpus))
    first, second = sorted(p for p in (probe.data / "indices").iterdir() if p.name.startswith("v"))
    shared = [
        p
        for p in sorted(first.rglob("*"))
        if p.is_file() and p.stat().st_nlink > 1 and (second / p.relative_to(first)).is_file()
    ]
    if not shared:
        return {
            "fault": SEGMENT,
            "item": "25.4",
            "skipped": "no shared file",
        }
    data = bytearray(shared[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    shared[0].write_bytes(bytes(data))
    steps = [probe.run("query", "compost"), probe.run("rollback", "1"), probe.run("rebuild")]
    return {
        "fault": SEGMENT,
        "item": "25.4",
        "steps": steps,
        "audit": probe.audit(files + 1),
    }


def store_trials(base: Path, files: int) -> list[dict[str, Any]]:
    rows = []
    for how in ("deleted", "emptied"):
        probe = _fresh(base, f"store-{how}", files)
        store = probe.data / "store.sqlite3"
        backup = probe.work / "backup.sqlite3"
        with sqlite3.connect(store) as source, sqlite3.connect(backup) as copy:
            source.backup(copy)
        if how == "deleted":
            for path in probe.data.glob("store.sqlite3*"):
                path.unlink()
        else:
            store.write_bytes(b"")
        steps = [probe.run("stats"), probe.run("query", "compost")]
        shutil.copy(backup, store)  # the recovery the message names: restore the store file
        steps.append({"cmd": "(store file restored) stats", **_short(probe.run("stats"))})
        rows.append(
            {"fault": f"`store.sqlite3` {how}", "item": "25.5", "steps": steps, "audit": probe.audit(files)}
        )
    return rows


def _row(fault: str, item: str, steps: list[dict[str, Any]], audit: dict[str, Any]) -> dict[str, Any]:
    return {"fault": fault, "item": item, "steps": steps, "audit": audit}


def _short(step: dict[str, Any]) -> dict[str, Any]:
    return {"exit": step["exit"], "says": step["says"]}


def vector_trial(base: Path, files: int) -> dict[str, Any]:
    probe = _fresh(base, "vector", files)
    db = sqlite3.connect(probe.data / "store.sqlite3")
    sha, blob = db.execute("SELECT sha256, vector FROM embeddings ORDER BY sha256 LIMIT 1").fetchone()
    data = bytearray(blob)
    for i in range(64, 128):
        data[i] ^= 0x5A
    db.execute("UPDATE embeddings SET vector = ? WHERE sha256 = ?", (bytes(data), sha))
    db.commit()
    check = db.execute("PRAGMA integrity_check").fetchone()[0]
    db.close()
    steps = [probe.run("rebuild"), probe.run("rebuild")]
    return {
        "fault": f"64 flipped bytes in a cached vector (integrity_check: {check})",
        "item": "25.6",
        "steps": steps,
        "audit": probe.audit(files),
    }


def disk_trials(base: Path, files: int) -> list[dict[str, Any]]:
    rows = []
    probe = _fresh(base, "querylog", files)
    log = probe.data / "logs" / "queries.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    log.mkdir()  # the log cannot be opened for appending
    steps = [probe.run("query", "compost"), probe.run("query", "tomatoes")]
    rows.append(
        {
            "fault": "the query log cannot be written",
            "item": "25.7",
            "steps": steps,
            "audit": probe.audit(files),
        }
    )

    mount = base / "tiny"
    mount.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        reason = done.stderr.strip() or f"exit {done.returncode}"
        rows.append(
            {"fault": "a full disk (2 MiB tmpfs)", "item": "25.7", "skipped": f"cannot mount: {reason}"}
        )
        return rows
    try:
        probe = Probe(base / "disk", files, data=mount / "data")  # only the data dir on the tiny disk
        probe.run("ingest", str(probe.corpus))
        write_corpus(probe.corpus, 400, start=files)
        steps = [probe.run("ingest", str(probe.corpus)), probe.run("query", "compost")]
        with open(mount / "ballast", "wb") as fh:  # no byte left: the query log cannot grow either
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        steps.append(
            {"cmd": "(disk filled to the last byte) query", **_short(probe.run("query", "tomatoes"))}
        )
        audit = probe.audit(files)
        (mount / "ballast").unlink()
        subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)
        steps.append({"cmd": "(space freed) ingest", **_short(probe.run("ingest", str(probe.corpus)))})
        after = probe.audit(files + 400)
        rows.append(
            {
                "fault": "a full disk (2 MiB tmpfs), ingest of 400 more files",
                "item": "25.7",
                "steps": steps,
                "audit": {
                    **audit,
                    "after_space_freed": after["lost"],
                    "documents_after": after.get("documents"),
                },
            }
        )
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
    return rows


def kill_trials(base: Path, files: int, kills: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for command in ("ingest", "rebuild", "rollback"):
        for k in range(kills):
            work = base / f"kill-{command}-{k}"
            shutil.rmtree(work, ignore_errors=True)
            probe = Probe(work, files)
            expect = files
            if command == "ingest":
                args: tuple[str, ...] = ("ingest", str(probe.corpus))
            else:
                probe.run("ingest", str(probe.corpus))
                write_corpus(probe.corpus, 2, start=files)
                probe.run("ingest", str(probe.corpus))
                expect = files + 2
                args = ("rebuild",) if command == "rebuild" else ("rollback", "1")
            t = time.perf_counter()
            full = probe.start(*args)
            full.communicate()
            duration = time.perf_counter() - t
            if command != "ingest":  # the timed run changed the state: start again from it
                probe.run("rollback", "2") if command == "rollback" else None
            else:
                shutil.rmtree(probe.data)
            delay = duration * rng.uniform(0.3, 0.95)
            proc = probe.start(*args)
            time.sleep(delay)
            killed = proc.poll() is None
            if killed:
                proc.send_signal(signal.SIGKILL)
            proc.communicate()
            after_kill = probe.run("stats")
            recovery = probe.run(*args) if command != "rollback" else probe.run("ingest", str(probe.corpus))
            rows.append(
                {
                    "fault": f"kill -9 during `{command}`",
                    "item": "kills",
                    "trial": k,
                    "at_seconds": round(delay, 2),
                    "of_seconds": round(duration, 2),
                    "killed": killed,
                    "steps": [{"cmd": "stats", **_short(after_kill)}, recovery],
                    "audit": probe.audit(expect),
                }
            )
    return rows


def writer_trials(base: Path, files: int, trials: int) -> list[dict[str, Any]]:
    """Two `hybrid-rag ingest` at once into one data dir (two folders): both should land, or one
    should wait or be refused; the live index must then index the store's chunks."""
    rows = []
    for k in range(trials):
        work = base / f"writers-{k}"
        shutil.rmtree(work, ignore_errors=True)
        probe = Probe(work, files)
        other = work / "corpus2"
        write_corpus(other, files, start=1000)
        first = probe.start("ingest", str(probe.corpus))
        second = probe.start("ingest", str(other))
        outs = [p.communicate() for p in (first, second)]
        steps = [
            {"cmd": f"ingest {name}", "exit": p.returncode, "says": probe.first_line(err)}
            for name, p, (_, err) in (("corpus", first, outs[0]), ("corpus2", second, outs[1]))
        ]
        landed = sum(s["exit"] == 0 for s in steps)
        audit = probe.audit(files if landed < 2 else 2 * files)
        rows.append(
            {
                "fault": "two `ingest` at once (two folders)",
                "item": "25.2",
                "trial": k,
                "steps": steps,
                "audit": audit,
            }
        )
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="fault-probe-"))
    rows: list[dict[str, Any]] = []
    try:
        parts = {
            "pointer": lambda: pointer_trials(base, args.files),
            "segment": lambda: [shared_segment_trial(base, args.files)],
            "store": lambda: store_trials(base, args.files),
            "vector": lambda: [vector_trial(base, args.files)],
            "disk": lambda: disk_trials(base, args.files),
            "kills": lambda: kill_trials(base, args.kill_files, args.kills, rng),
            "writers": lambda: writer_trials(base, args.files, args.writers),
            "lost_or_stale": lambda: lost_or_stale.trials(_fresh, base, args.files),  # issue 31's cases
            "issue43": lambda: issue43.trials(_fresh, base, args.files),  # issue 43's cases
        }
        for name in getattr(args, "parts", ",".join(parts)).split(","):
            found = parts[name.strip()]()
            for row in found:
                print(
                    f"{row['fault']}: {row.get('audit', {}).get('lost', row.get('skipped'))}", file=sys.stderr
                )
            rows.extend(found)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {"benchmark": "fault_probe", "files": args.files, "kill_files": args.kill_files, "rows": rows}


def _cost(step: dict[str, Any]) -> str:
    """`` (2.1 s, 180 MB)`` for a timed step (issue 43's), else nothing."""
    return f" ({step['seconds']:g} s, {step['peak_mb']:g} MB)" if "seconds" in step else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "(nothing)"


def render(result: dict[str, Any]) -> str:
    lines = [
        "| fault | command: exit, what the user sees (first line on stderr) | lost afterwards |",
        "|---|---|---|",
    ]
    for row in result["rows"]:
        fault = row["fault"]
        if "trial" in row:
            fault += f" #{row['trial'] + 1}"
        if "at_seconds" in row:
            note = "" if row["killed"] else ", finished first"
            fault += f" (at {row['at_seconds']} of {row['of_seconds']} s{note})"
        if "skipped" in row:
            lines.append(f"| {_cell(fault)} | skipped: {_cell(row['skipped'])} | - |")
            continue
        steps = "<br>".join(f"`{s['cmd']}`: {s['exit']}{_cost(s)}, {_cell(s['says'])}" for s in row["steps"])
        audit = row["audit"]
        lost = audit.get("lost", audit.get("store", "?"))
        if "after_space_freed" in audit:
            lost += (
                f"; after space freed: {audit['after_space_freed']} ({audit['documents_after']} documents)"
            )
        lines.append(f"| {_cell(fault)} | {steps} | {_cell(lost)} |")
    total = len([r for r in result["rows"] if "audit" in r])
    clean = len([r for r in result["rows"] if r.get("audit", {}).get("lost") == "nothing"])
    lines.append("")
    lines.append(
        f"{clean} of {total} trials lost nothing ({result['files']} files a trial, "
        f"{result['kill_files']} in the kill trials)."
    )
    return "\n".join(lines)
