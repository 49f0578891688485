"""An edit to one file under ``hybrid-rag watch``, re-indexed live: seconds from the write to the
watch's line saying the new version is live (its debounce included), with the default model.

A folder of this repository (``--folder``, from ``git archive HEAD``) is ingested once, then
``hybrid-rag watch`` runs on it; ``--edits`` times a line is appended to one of its files and the
time to ``... 1 changed ...: index version N live`` on the watch's stderr is read. The first
edit also pays for what the watch loads lazily (the model on its first embedding).

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run watch_edit
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "hybrid_rag.cli"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--folder", default="hybrid_rag/retrieval")
    p.add_argument("--file", default="fusion.py", help="the file edited, relative to the folder")
    p.add_argument("--edits", type=int, default=6)
    p.add_argument("--timeout", type=float, default=120.0)


def _log(*args: Any) -> None:
    print("[watch_edit]", *args, file=sys.stderr, flush=True)


def _lines(stream: Any, out: queue.Queue[tuple[float, str]]) -> None:
    for line in iter(stream.readline, ""):
        out.put((time.perf_counter(), line.rstrip()))


def _wait(lines: queue.Queue[tuple[float, str]], needle: str, timeout: float) -> tuple[float, str]:
    end = time.perf_counter() + timeout
    while True:
        at, line = lines.get(timeout=max(end - time.perf_counter(), 0.01))
        if needle in line:
            return at, line


def run(args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory(prefix="watch-edit-") as tmp:
        tree, data = Path(tmp) / "tree", Path(tmp) / "data"
        tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "HEAD", args.folder], capture_output=True, check=True
        )
        subprocess.run(["tar", "x", "-C", str(tree)], input=archive.stdout, check=True)
        root = tree / args.folder
        t = time.perf_counter()
        subprocess.run(
            [*CLI, "--data-dir", str(data), "ingest", str(root)], env=env, check=True, capture_output=True
        )
        ingest_s = time.perf_counter() - t
        _log(f"ingested {root} in {ingest_s:.1f} s")
        watch = subprocess.Popen(
            [*CLI, "--data-dir", str(data), "watch", str(root)], env=env, stderr=subprocess.PIPE, text=True
        )
        lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=_lines, args=(watch.stderr, lines), daemon=True).start()
        seconds, said = [], []
        try:
            _wait(lines, "watching", args.timeout)
            target = root / args.file
            for k in range(args.edits):
                time.sleep(2.0)  # the watch is idle again
                with target.open("a") as f:
                    f.write(f"\n# edit {k}: the watcher re-indexes this line live\n")
                written = time.perf_counter()
                at, line = _wait(lines, "live with", args.timeout)
                seconds.append(at - written)
                said.append(line)
                _log(f"edit {k}: {seconds[-1]:.2f} s ({line})")
        finally:
            watch.send_signal(signal.SIGTERM)
            watch.wait(timeout=60)
    return {
        "folder": args.folder,
        "file": args.file,
        "first_ingest_s": round(ingest_s, 1),
        "seconds": [round(s, 2) for s in seconds],
        "median_after_first": round(statistics.median(seconds[1:]), 2) if len(seconds) > 1 else None,
        "lines": said,
    }


def render(result: dict[str, Any]) -> str:
    last = result["lines"][-1] if result["lines"] else ""
    lines = [
        f"`{result['folder']}` ingested in {result['first_ingest_s']} s; `{result['file']}` edited "
        f"{len(result['seconds'])} times under `watch` (debounce 500 ms included):",
        "",
        "| edit | 1 | "
        + " | ".join(str(k + 1) for k in range(1, len(result["seconds"])))
        + " | median after the first |",
        "|---" * (len(result["seconds"]) + 2) + "|",
        "| seconds to live | "
        + " | ".join(f"{s:.2f}" for s in result["seconds"])
        + f" | {result['median_after_first']} |",
        "",
        f"The watch's line: `{last}`.",
    ]
    return "\n".join(lines)
