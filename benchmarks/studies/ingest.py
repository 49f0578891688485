"""Streaming ingest: throughput against the model's own, a resumed ingest, memory, the first run.

    flock /tmp/hybrid-rag-bench.lock .venv/bin/python benchmarks/harness.py run ingest \
        [--sample-chunks 240] [--rss-chunks 500 2000 8000] [--skip first_run throughput resume rss]
    .venv/bin/python benchmarks/harness.py report ingest   # RESULTS.md#streaming-ingest

Every part reads a copy of the repository as committed (``git archive HEAD``), so files being
edited in the working tree do not change the figures.

* **first_run**: ``hybrid-rag ingest COPY --json`` in a fresh data dir with the default settings
  and model (a subprocess: model load included), then the demo's question (``scripts/demo.sh``)
  through ``hybrid-rag context --json``: which files its first sources are.
* **throughput**: whole files of the copy's ``hybrid_rag/`` up to ``--sample-chunks`` chunks. The
  model's raw throughput is ``embed_passage_windows`` over exactly those chunk texts in one call
  (sentence-transformers sorts them by length: its best case), measured before and after the
  ingest of the same files (model loaded once, same process); ingest throughput is chunks
  embedded / the ingest's whole wall time. Also where the embedding time goes: windows a chunk,
  word pieces a window, the windows' overlap, padding, torch threads 1 vs the default.
* **resume**: the copy ingested by a subprocess with the fake embedder slowed to a model-like pace
  (``ingest.batch_chunks`` at its default), SIGKILLed when 70% of the texts were embedded, then
  the same ingest again: chunks embedded twice (the batch in flight) and store equality.
* **rss**: synthetic corpora of ``--rss-chunks`` chunks ingested by a subprocess each (fake
  embedder, 384 dimensions): the resident set after start-up and its largest value sampled after
  every file and commit of the streaming phase (before the index build, whose memory grows with
  the corpus by design).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# the demo's default question, read from scripts/demo.sh: written here (or in the JSON, or in
# RESULTS.md) it would be ingested too, and the first run would answer it from these files
_DEMO_QUESTION = re.compile(r'question=\$\{2:-"([^"]+)"\}')
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
PARTS = ("first_run", "throughput", "resume", "rss")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sample-chunks", type=int, default=240)
    parser.add_argument("--rss-chunks", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--kill-at", type=float, default=0.7, help="resume: kill at this share embedded")
    parser.add_argument("--skip", nargs="*", default=[], choices=PARTS)
    parser.add_argument(
        "--reuse",
        type=Path,
        help="a result JSON of an earlier run: its parts that this run skips are kept, with its environment",
    )


def _log(message: str) -> None:
    print(f"[ingest] {message}", file=sys.stderr, flush=True)


def repo_copy(dest: Path) -> Path:
    """The repository as committed at HEAD, extracted under ``dest``."""
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    target = dest / "hybrid-rag"
    target.mkdir(parents=True)
    tar = dest / "head.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as handle:
        handle.extractall(target, filter="data")
    tar.unlink()
    return target


def _cli(*args: str, timeout: int = 3600) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hybrid_rag.cli", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"hybrid-rag {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return done, time.perf_counter() - start


def first_run(copy: Path, work: Path) -> dict[str, Any]:
    data = work / "first-run-data"
    done, wall = _cli("--data-dir", str(data), "ingest", str(copy), "--json")
    report = json.loads(done.stdout)
    reasons = Counter(s["reason"].split(" (")[0].split(" of ")[0] for s in report["skipped"])
    found = _DEMO_QUESTION.search((copy / "scripts" / "demo.sh").read_text())
    if found is None:
        raise RuntimeError("no default question in scripts/demo.sh")
    context, _ = _cli("--data-dir", str(data), "context", found.group(1), "--json")
    sources = json.loads(context.stdout).get("sources", [])
    first = [os.path.relpath(s["path"], copy) for s in sources[:3]]
    return {
        "wall_seconds": round(wall, 1),
        "seconds": {k: round(v, 2) for k, v in report["seconds"].items()},
        "files_ingested": len(report["added"]),
        "files_skipped": len(report["skipped"]),
        "skipped_reasons": dict(reasons.most_common()),
        "chunks": report["chunks_written"],
        "embedded": report["embedded"],
        "duplicates": len(report["duplicates"]),
        "first_sources": first,
    }


def _sample(copy: Path, target: Path, chunks: int) -> list[str]:
    """Copy whole files of ``hybrid_rag/`` until they hold ``chunks`` chunks; their chunk texts."""
    from hybrid_rag.ingest.chunking import chunk_file
    from hybrid_rag.ingest.loaders import iter_files
    from hybrid_rag.settings import Settings
    from hybrid_rag.types import LoadedFile

    settings = Settings()
    texts: list[str] = []
    for f in iter_files([copy / "hybrid_rag"], settings.loading):
        if not isinstance(f, LoadedFile) or len(texts) >= chunks:
            continue
        spans = chunk_file(f, settings.chunking)
        texts.extend(sp.text for sp in spans)
        dest = target / Path(f.path).relative_to(copy)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f.path, dest)
    return list(dict.fromkeys(texts))


def _padding(lengths: list[int], batch: int) -> float:
    """Share of padded positions once sorted by length and cut in batches (as sentence-transformers does)."""
    ordered = sorted(lengths, reverse=True)
    padded = sum(
        max(ordered[i : i + batch]) * len(ordered[i : i + batch]) for i in range(0, len(ordered), batch)
    )
    return 1 - sum(ordered) / padded if padded else 0.0


def throughput(copy: Path, work: Path, sample_chunks: int) -> dict[str, Any]:
    import torch

    from hybrid_rag.engine import Engine
    from hybrid_rag.settings import Settings

    texts = _sample(copy, work / "sample", sample_chunks)
    settings = Settings().with_overrides({"paths.data_dir": str(work / "throughput-data")})
    engine = Engine(settings)
    embedder: Any = engine.embedder
    embedder.embed_passage_windows(texts[:4])  # load and warm up the model
    tokenizer = embedder.model.tokenizer
    windows, owners = embedder.passage_windows(texts)
    window_pieces = [len(tokenizer(w, verbose=False)["input_ids"]) for w in windows]
    chunk_pieces = [len(tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"]) for t in texts]
    default_threads = torch.get_num_threads()
    threads = {}
    probe = texts[:32]
    for n in sorted({1, 2, default_threads}):
        torch.set_num_threads(n)
        start = time.perf_counter()
        embedder.embed_passage_windows(probe)
        threads[str(n)] = round(len(probe) / (time.perf_counter() - start), 2)
    torch.set_num_threads(default_threads)

    def raw() -> float:
        start = time.perf_counter()
        embedder.embed_passage_windows(texts)
        return len(texts) / (time.perf_counter() - start)

    _log(f"throughput: {len(texts)} chunks, raw")
    raw_before = raw()
    _log("throughput: ingest")
    start = time.perf_counter()
    report = engine.ingest([work / "sample"])
    wall = time.perf_counter() - start
    _log("throughput: raw again")
    raw_after = raw()
    engine.close()
    raw_mean = (raw_before + raw_after) / 2
    ingest_cps = report.embedded / wall
    return {
        "chunks": len(texts),
        "embedded": report.embedded,
        "files": len(report.plan.added),
        "raw_chunks_per_s": [round(raw_before, 3), round(raw_after, 3)],
        "ingest_chunks_per_s": round(ingest_cps, 3),
        "embed_stage_chunks_per_s": round(report.embedded / report.seconds["embed"], 3),
        "ratio": round(ingest_cps / raw_mean, 3),
        "ingest_seconds": {k: round(v, 2) for k, v in report.seconds.items()},
        "ingest_wall": round(wall, 2),
        "torch_threads_default": default_threads,
        "chunks_per_s_by_threads": threads,
        "windows_per_chunk": round(len(windows) / len(texts), 3),
        "word_pieces_per_window": round(float(np.mean(window_pieces)), 1),
        "window_limit": embedder.max_seq_length,
        "overlap_overhead": round(sum(window_pieces) / (sum(chunk_pieces) + 2 * len(windows)) - 1, 3),
        "padding": round(_padding(window_pieces, settings.embedding.batch_size), 4),
        "owners_check": len(set(owners)) == len(texts),
    }


RESUME_DRIVER = textwrap.dedent(
    """\
    import sys, time
    from hybrid_rag.models.embedders import FAKE_WINDOW_WORDS, FakeEmbedder
    from hybrid_rag.engine import Engine
    from hybrid_rag.settings import Settings

    class Paced(FakeEmbedder):  # the fake embedder at a model-like pace, announcing each batch
        def embed_passage_windows(self, texts):
            print(f"embed {len(texts)}", flush=True)
            time.sleep(0.01 * len(texts))
            return super().embed_passage_windows(texts)

    settings = Settings().with_overrides({"paths.data_dir": sys.argv[1], "embedding.model": "fake"})
    engine = Engine(settings, embedder=Paced(dimension=256, window_words=FAKE_WINDOW_WORDS))
    report = engine.ingest([sys.argv[2]])
    print(f"done {report.embedded}", flush=True)
    """
)


def _rows(data: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(data / "store.sqlite3") as db:
        return db.execute(
            "SELECT d.path, c.start_line, c.end_line, c.sha256 FROM chunks c JOIN documents d "
            "ON c.document_id = d.id ORDER BY d.path, c.position"
        ).fetchall()


def resume(copy: Path, work: Path, kill_at: float) -> dict[str, Any]:
    from hybrid_rag.engine import Engine
    from hybrid_rag.settings import Settings

    def settings(data: Path) -> Settings:
        return Settings().with_overrides({"paths.data_dir": str(data), "embedding.model": "fake"})

    reference = Engine(settings(work / "resume-reference"))
    total = reference.ingest([copy]).embedded
    reference.close()
    script = work / "resume_driver.py"
    script.write_text(RESUME_DRIVER)
    data = work / "resume-data"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(data), str(copy)], stdout=subprocess.PIPE, text=True, env=ENV
    )
    assert proc.stdout is not None
    announced = 0
    for line in proc.stdout:
        if line.startswith("embed"):
            if announced >= kill_at * total:  # 70% embedded: kill half-way through the next batch
                time.sleep(0.005 * int(line.split()[1]))
                proc.send_signal(signal.SIGKILL)
                break
            announced += int(line.split()[1])
    in_flight = int(line.split()[1]) if line.startswith("embed") else 0
    proc.wait(timeout=120)
    with sqlite3.connect(data / "store.sqlite3") as db:
        committed = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        files_committed = db.execute("SELECT count(*) FROM documents").fetchone()[0]
    engine = Engine(settings(data))
    again = engine.ingest([copy])
    engine.close()
    batch = Settings().ingest.batch_chunks
    return {
        "embedder": "fake, 10 ms a text",
        "batch_chunks": batch,
        "texts": total,
        "killed_after": announced,
        "in_flight": in_flight,
        "committed_at_kill": committed,
        "files_committed_at_kill": files_committed,
        "rerun_embedded": again.embedded,
        "embedded_twice": announced + in_flight + again.embedded - total,  # started by both runs
        "store_equal": _rows(data) == _rows(work / "resume-reference"),
    }


RSS_CHILD = textwrap.dedent(
    """\
    import json, os, random, resource, sys, time
    from pathlib import Path
    from hybrid_rag.models.embedders import FAKE_WINDOW_WORDS, FakeEmbedder
    from hybrid_rag.engine import Engine
    from hybrid_rag.settings import Settings

    work, chunks, dedupe = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(20000)]
    corpus = work / "corpus"
    for i in range(chunks // 3):  # about three chunks a file
        lines = [" ".join(rng.choices(vocabulary, k=12)) for _ in range(50)]
        path = corpus / f"{i // 500:03d}" / f"doc{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\\n".join(lines) + "\\n")
    settings = Settings().with_overrides(
        {"paths.data_dir": str(work / "data"), "embedding.model": "fake", "dedupe.enabled": dedupe}
    )
    engine = Engine(settings, embedder=FakeEmbedder(dimension=384, window_words=FAKE_WINDOW_WORDS))
    engine.store.counts()

    def rss_mib():  # the resident set now (VmRSS), not the high-water mark of start-up
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    start, t = rss_mib(), time.perf_counter()
    most = [start]

    def progress(stage, done, total):
        most[0] = max(most[0], rss_mib())  # after every file and every commit
        if stage == "index":  # the streaming phase is over: report, skip the build
            report = {"start_mib": start, "streamed_mib": most[0], "seconds": time.perf_counter() - t,
                      "chunks": engine.store.chunk_count()}
            print(json.dumps(report), flush=True)
            os._exit(0)

    engine.ingest([corpus], progress=progress)
    """
)


def rss(work: Path, sizes: list[int]) -> list[dict[str, Any]]:
    from hybrid_rag.settings import Settings

    batch = Settings().ingest.batch_chunks
    rows = []
    for size, dedupe in [(size, True) for size in sizes] + [(max(sizes), False)]:
        _log(f"rss: {size} chunks, dedupe {dedupe}")
        folder = work / f"rss-{size}-{dedupe}"
        folder.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", RSS_CHILD, str(folder), str(size), "1" if dedupe else "0"],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=3600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"rss child failed: {done.stderr[-500:]}")
        out = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(
            {
                "chunks": out["chunks"],
                "dedupe": dedupe,
                "batches": -(-out["chunks"] // batch),
                "start_mib": round(out["start_mib"], 1),
                "streamed_mib": round(out["streamed_mib"], 1),
                "seconds": round(out["seconds"], 1),
            }
        )
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    random.seed(0)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ingest-study-") as tmp:
        work = Path(tmp)
        copy = repo_copy(work)
        if "first_run" not in args.skip:
            _log("first run: hybrid-rag ingest on the committed repository")
            result["first_run"] = first_run(copy, work)
        if "throughput" not in args.skip:
            result["throughput"] = throughput(copy, work, args.sample_chunks)
        if "resume" not in args.skip:
            _log("resume: kill at 70%, then again")
            result["resume"] = resume(copy, work, args.kill_at)
        if "rss" not in args.skip:
            result["rss"] = rss(work, args.rss_chunks)
    if args.reuse is not None:  # untimed parts (counts, memory) measured by an earlier run
        earlier = json.loads(args.reuse.read_text())
        for part in PARTS:
            if part in args.skip and part in earlier:
                result[part] = {"rows": earlier[part]} if isinstance(earlier[part], list) else earlier[part]
                result[part].setdefault("environment", earlier.get("environment", {}))
    return result


def _measured(part: dict[str, Any]) -> str:
    """Where a part taken over from an earlier run was measured (empty for this run's own)."""
    env = part.get("environment")
    if not env:
        return ""
    load = (env.get("load_average_before") or ["?"])[0]
    commit = ((env.get("git") or {}).get("commit") or "?")[:7]
    return f" Measured by an earlier run at commit {commit}, load average {load} before it."


def render(result: dict[str, Any]) -> str:
    out: list[str] = []
    first = result.get("first_run")
    if first:
        s = first["seconds"]
        minutes, seconds = divmod(first["wall_seconds"], 60)
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in s.items())
        skipped = "; ".join(f"{n} {reason}" for reason, n in first["skipped_reasons"].items())
        out += [
            "**First run** (`hybrid-rag ingest` on `git archive HEAD`, default settings and model, "
            "model load included):",
            "",
            "| wall | files ingested | files skipped | chunks | embedded | near-duplicates |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| **{int(minutes)} min {seconds:.0f} s** | {first['files_ingested']} "
            f"| {first['files_skipped']} | {first['chunks']} | {first['embedded']} | {first['duplicates']} |",
            "",
            f"Stages: {stages}. Skipped: {skipped}.",
            "The demo's question (`scripts/demo.sh`), through `hybrid-rag context`: first sources "
            + ", ".join(f"`{p}`" for p in first["first_sources"])
            + ".",
            "",
        ]
    tp = result.get("throughput")
    if tp:
        raw = sum(tp["raw_chunks_per_s"]) / 2
        threads = ", ".join(f"{n} thread(s) {v:.2f}" for n, v in tp["chunks_per_s_by_threads"].items())
        threads += f" (the ingest ran with {tp['torch_threads_default']})"
        out += [
            f"**Throughput** ({tp['chunks']} chunks of {tp['files']} files, the same texts for both):",
            "",
            "| model raw, before / after (chunks/s) | ingest, whole wall (chunks/s) | ingest / raw | "
            "embed stage alone (chunks/s) |",
            "|---:|---:|---:|---:|",
            f"| {tp['raw_chunks_per_s'][0]:.2f} / {tp['raw_chunks_per_s'][1]:.2f} | "
            f"{tp['ingest_chunks_per_s']:.2f} | **{tp['ratio'] * 100:.0f}%** (raw mean {raw:.2f}) | "
            f"{tp['embed_stage_chunks_per_s']:.2f} |",
            "",
            "Ingest stages: " + ", ".join(f"{k} {v:.2f} s" for k, v in tp["ingest_seconds"].items()) + ".",
            f"Where the embedding time goes: {tp['windows_per_chunk']:.2f} windows a chunk of "
            f"{tp['word_pieces_per_window']:.0f} word pieces on average (limit {tp['window_limit']}); "
            f"the windows' overlap adds {tp['overlap_overhead'] * 100:.0f}% word pieces; padding after "
            f"sorting by length {tp['padding'] * 100:.1f}%; chunks/s on 32 chunks with torch {threads}.",
            "",
        ]
    rs = result.get("resume")
    if rs:
        out += [
            f"**Resume** (the committed repository, {rs['embedder']}, `ingest.batch_chunks` "
            f"{rs['batch_chunks']}, SIGKILL once 70% of the texts were embedded):",
            "",
            "| texts | embedded before the kill | committed | in flight | embedded by the re-run | "
            "embedded twice | store equal to an uninterrupted ingest |",
            "|---:|---:|---:|---:|---:|---:|---|",
            f"| {rs['texts']} | {rs['killed_after']} | {rs['committed_at_kill']} "
            f"({rs['files_committed_at_kill']} files) | {rs['in_flight']} | {rs['rerun_embedded']} | "
            f"**{rs['embedded_twice']}** | {'yes' if rs['store_equal'] else '**no**'} |",
            "",
        ]
        if _measured(rs):
            out += [_measured(rs).strip(), ""]
    rows = result.get("rss")
    note = ""
    if isinstance(rows, dict):  # taken over from an earlier run
        rows, note = rows["rows"], _measured(rows)
    if rows:
        out += [
            "**Memory** (synthetic corpora, fake embedder with 384 dimensions; the resident set after "
            "start-up, and its largest value sampled after every file and commit of the streaming phase, "
            "before the index build):",
            "",
            "| chunks | near-duplicate check | batches | RSS at start | largest RSS while streaming | growth "
            "| seconds |",
            "|---:|---|---:|---:|---:|---:|---:|",
        ]
        out += [
            f"| {r['chunks']:,} | {'on' if r.get('dedupe', True) else 'off'} | {r['batches']} "
            f"| {r['start_mib']:.0f} MiB | {r['streamed_mib']:.0f} MiB | "
            f"{r['streamed_mib'] - r['start_mib']:.0f} MiB | {r['seconds']:.0f} |"
            for r in rows
        ]
        if note:
            out += ["", note.strip()]
    return "\n".join(out)
