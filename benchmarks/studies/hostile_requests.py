"""Hostile requests against the filter language and the HTTP API (issue 25, its probe re-run).

Store: ``--files`` small Markdown files in nested folders (paths of about 110 characters), ingested
with the fake embedder. Measured:

* each pathological glob, ``store.chunk_ids_matching(path ~ glob)`` now (the linear-time matcher
  behind SQLite's ``hybrid_rag_glob``), against "before": the regular expression the old
  translation gave (one ``.*`` a ``**``, no collapsing) run with ``re.search`` over the same paths,
  as SQLite's ``REGEXP`` did, in a subprocess stopped after ``--before-timeout`` seconds;
* 7,000 ORed distinct ``path~`` globs (refused by ``retrieval.filter_max_globs``: the time to the
  refusal) and a filter at that limit (64 distinct globs), answered;
* ``/healthz`` latency of a real ``hybrid-rag serve`` (one worker), alone and while ``--clients``
  clients send the hostile filters back to back for ``--seconds``, with the statuses they got;
* schemathesis (every check, ``--examples`` a phase and operation, seed 25) against a server on a
  small store, as ``tests/server/test_openapi_holds_under_schemathesis.py`` runs it;
* a folder tree ``--depth`` levels deep (issue 42.1), a Markdown file at the top and one at the
  bottom: "before" is the walk ``embedding.model: auto`` used to sample it with (``Path.rglob``, in
  a subprocess), "after" the ingest itself with ``auto`` (its models the fake embedder).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
for entry in (str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "server")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the studies' own helpers
from _server import wait_ready  # noqa: E402

from hybrid_rag.engine import Engine  # noqa: E402
from hybrid_rag.errors import InputError  # noqa: E402
from hybrid_rag.filters import parse_filter  # noqa: E402
from hybrid_rag.settings import load_settings  # noqa: E402

OVERRIDES = {"HYBRID_RAG_EMBEDDING__MODEL": "fake", "HYBRID_RAG_DEDUPE__ENABLED": "false"}
GLOBS = {
    "`**` x 4 + `x`": "**" * 4 + "x",
    "`**` x 6 + `x`": "**" * 6 + "x",
    "`**` x 8 + `x` (the 20-character filter)": "**" * 8 + "x",
    "`**` x 16 + `x`": "**" * 16 + "x",
    "`*a` x 12 + `x`": "*a" * 12 + "x",
    "`**/` x 10 + `*.x`": "**/" * 10 + "*.x",
}
OLD_REGEX = r"""
import re, sys, time
def old(pattern):
    prefix = "^" if pattern.startswith("/") else "(?:^|/)"
    pattern += "**" if pattern.endswith("/") else ""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("/**/", i): out.append("/(?:.*/)?"); i += 4
        elif i == 0 and pattern.startswith("**/"): out.append("(?:.*/)?"); i += 3
        elif pattern.startswith("**", i): out.append(".*"); i += 2
        else: out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i]))); i += 1
    return re.compile(prefix + "".join(out) + r"\Z")
regex = old(sys.argv[1])
paths = open(sys.argv[2]).read().splitlines()
start = time.perf_counter()
hits = sum(1 for p in paths if regex.search(p))
print(time.perf_counter() - start, hits)
"""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", type=int, default=2000, help="documents in the store")
    parser.add_argument("--before-timeout", type=float, default=20.0, help="seconds the old regex may run")
    parser.add_argument("--clients", type=int, default=4, help="clients sending hostile filters")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of hostile load")
    parser.add_argument(
        "--examples", type=int, default=25, help="schemathesis examples a phase and operation"
    )
    parser.add_argument("--depth", type=int, default=1500, help="nested folders of the deep tree")


def build_store(root: Path, files: int) -> Path:
    docs = root / "docs"
    for i in range(files):
        folder = docs / f"team{i % 20:02d}" / ("service-" + "a" * 30) / f"module{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i:05d}.md").write_text(f"# Note {i}\n\nsoil clay drainage note number {i}\n")
    return docs


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ms = np.array(values) * 1000
    return {
        "n": len(values),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "max": float(ms.max()),
    }


def glob_times(engine: Engine, paths_file: Path, timeout: float) -> list[dict[str, Any]]:
    rows = []
    for name, glob in GLOBS.items():
        start = time.perf_counter()
        hits = len(engine.store.chunk_ids_matching(parse_filter(f"path ~ '{glob}'")))
        after = time.perf_counter() - start
        try:
            done = subprocess.run(
                [sys.executable, "-c", OLD_REGEX, glob, str(paths_file)],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            )
            before: float | None = float(done.stdout.split()[0])
        except subprocess.TimeoutExpired:
            before = None
        rows.append({"glob": name, "chars": len(glob), "after_s": after, "before_s": before, "hits": hits})
        log(f"{name}: after {after:.4f} s, before {before if before is not None else '> timeout'}")
    return rows


def or_globs(engine: Engine) -> dict[str, Any]:
    text = " or ".join(f"path ~ '**/note{i:05d}*.md'" for i in range(7000))
    start = time.perf_counter()
    try:
        engine.query("soil", filters=text)
        refused = ""
    except InputError as exc:
        refused = str(exc)
    refused_s = time.perf_counter() - start
    at_limit = " or ".join(f"path ~ '**/module{i % 7}/note{i:05d}*.md'" for i in range(64))
    start = time.perf_counter()
    hits = len(engine.store.chunk_ids_matching(parse_filter(at_limit)))
    return {
        "terms": 7000,
        "refused": refused,
        "refused_s": refused_s,
        "at_limit_globs": 64,
        "at_limit_s": time.perf_counter() - start,
        "at_limit_hits": hits,
    }


def start_server(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **OVERRIDES, "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    cmd = [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data_dir), "serve", "--no-auth"]
    process = subprocess.Popen(
        [*cmd, "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    wait_ready(process, url)
    return process, url


def healthz_under_load(url: str, clients: int, seconds: float) -> dict[str, Any]:
    def probe(n: int, stop: threading.Event | None = None) -> list[float]:
        out = []
        with httpx.Client(base_url=url, timeout=120) as client:
            while (stop is None and len(out) < n) or (stop is not None and not stop.is_set()):
                start = time.perf_counter()
                client.get("/healthz")
                out.append(time.perf_counter() - start)
                time.sleep(0.02)
        return out

    alone = probe(100)
    stop = threading.Event()
    statuses: dict[str, int] = {}
    query_times: list[float] = []
    lock = threading.Lock()
    bodies = [{"query": "soil", "filters": f"path ~ '{g}'"} for g in GLOBS.values()]
    bodies.append({"query": "soil", "filters": " or ".join(f"path ~ '**/n{i}*x'" for i in range(7000))})
    # issue 31: a filter of 60,000 and-terms (889 KB: 413 now), the largest one a 128 KiB body holds
    # (parsed off the event loop, refused by retrieval.filter_max_terms), dates at the calendar's ends
    huge = " and ".join(f"meta.k{i % 50}!=v{i}" for i in range(60_000))
    bodies.append({"query": "soil", "filters": huge})
    bodies.append({"query": "soil", "filters": huge[:130_000].rsplit(" and ", 1)[0]})
    bodies.append({"query": "soil", "filters": "mtime<9999-12-31"})
    bodies.append({"query": "soil", "filters": "meta.date=9999-12-31"})

    def hostile(k: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            i = k
            while not stop.is_set():
                start = time.perf_counter()
                code = client.post("/v1/query", json=bodies[i % len(bodies)]).status_code
                with lock:
                    statuses[str(code)] = statuses.get(str(code), 0) + 1
                    query_times.append(time.perf_counter() - start)
                i += 1

    threads = [threading.Thread(target=hostile, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    under: list[float] = []
    prober = threading.Thread(target=lambda: under.extend(probe(0, stop)))
    prober.start()
    time.sleep(seconds)
    stop.set()
    for t in [*threads, prober]:
        t.join()
    return {
        "alone": percentiles(alone),
        "under_load": percentiles(under),
        "hostile_queries": percentiles(query_times),
        "statuses": dict(sorted(statuses.items())),
        "clients": clients,
        "seconds": seconds,
    }


def schemathesis_run(work: Path, examples: int) -> dict[str, Any]:
    from test_openapi_holds_under_schemathesis import run_schemathesis, small_server

    server, engine = small_server(work)
    start = time.perf_counter()
    try:
        code, _, summary = run_schemathesis(server.url, work, examples)
    finally:
        server.stop()
        engine.close()
    return {**summary, "exit_code": code, "examples": examples, "seconds": time.perf_counter() - start}


OLD_SAMPLER_WALK = """
import sys, time
from pathlib import Path
start = time.perf_counter()
try:
    found = sorted(Path(sys.argv[1]).rglob("*"))  # what models/auto.py's sampler walked with
    print(f"ok {len(found)} {time.perf_counter() - start}")
except BaseException as exc:
    print(f"{type(exc).__name__} 0 {time.perf_counter() - start}")
"""


def deep_tree(root: Path, depth: int) -> dict[str, Any]:
    """The old sampler's walk of a ``depth``-deep tree, then the ingest of it with ``auto``."""
    from deep_tree import make_deep, remove_deep, write_deep

    from hybrid_rag.models.auto import AutoEmbedder
    from hybrid_rag.models.embedders import FakeEmbedder
    from hybrid_rag.settings import EmbeddingSettings

    tree = root / "deep"
    bottom = make_deep(tree, depth)
    try:
        write_deep(bottom, "bottom.md", "# The bottom\n\nThe rotor wing stalls at the bottom of the tree.\n")
        (tree / "top.md").write_text("# The top\n\nThe rotor wing stalls at the top of the tree.\n")
        old = subprocess.run(
            [sys.executable, "-c", OLD_SAMPLER_WALK, str(tree)], capture_output=True, text=True, timeout=600
        ).stdout.split()
        auto = AutoEmbedder(EmbeddingSettings(model="auto"), lambda s: FakeEmbedder(64, model_name=s.model))
        engine = Engine(load_settings(data_dir=root / "deep-data"), embedder=auto)
        start = time.perf_counter()
        try:
            report = engine.ingest([tree])
            seconds, error = time.perf_counter() - start, None
        except Exception as exc:  # the figure is whether it crashes
            seconds, error, report = time.perf_counter() - start, f"{type(exc).__name__}: {exc}"[:200], None
        finally:
            engine.close()
    finally:
        remove_deep(tree)
    return {
        "depth": depth,
        "before": {
            "outcome": old[0] if old else "no output",
            "seconds": float(old[2]) if len(old) > 2 else None,
        },
        "after": {
            "error": error,
            "seconds": seconds,
            "files": len(report.plan.added) if report else 0,
            "chunks": report.chunks_written if report else 0,
            "choice": auto.choice,
        },
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    for key, value in OVERRIDES.items():
        os.environ.setdefault(key, value)
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        root = Path(tmp)
        log(f"ingesting {args.files} files")
        docs = build_store(root, args.files)
        engine = Engine(load_settings(data_dir=root / "data"))
        engine.ingest([docs])
        paths = sorted(d.path for d in engine.store.documents())
        paths_file = root / "paths.txt"
        paths_file.write_text("\n".join(paths))
        globs = glob_times(engine, paths_file, args.before_timeout)
        ored = or_globs(engine)
        engine.close()
        log("serving")
        process, url = start_server(root / "data")
        try:
            healthz = healthz_under_load(url, args.clients, args.seconds)
        finally:
            process.terminate()
            process.wait(30)
        log("schemathesis")
        (root / "st").mkdir()
        schemathesis = schemathesis_run(root / "st", args.examples)
        log(f"a tree {args.depth} folders deep")
        deep = deep_tree(root, args.depth)
    mean_len = float(np.mean([len(p) for p in paths]))
    return {
        "store": {"documents": len(paths), "mean_path_chars": mean_len},
        "before_timeout_s": args.before_timeout,
        "globs": globs,
        "ored_globs": ored,
        "healthz": healthz,
        "schemathesis": schemathesis,
        "deep_tree": deep,
    }


def _s(value: float | None, timeout: float) -> str:
    if value is None:
        return f"> {timeout:g} s (stopped)"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def render(result: dict[str, Any]) -> str:
    store, timeout = result["store"], result["before_timeout_s"]
    lines = [
        f"Store: {store['documents']} documents (paths of {store['mean_path_chars']:.0f} characters on "
        "average), the fake embedder.",
        "",
        "| glob | characters | before: regex (`re.search`, as SQLite's REGEXP) | after: `hybrid_rag_glob` "
        "| matches |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["globs"]:
        before, after = _s(row["before_s"], timeout), _s(row["after_s"], timeout)
        lines.append(f"| {row['glob']} | {row['chars']} | {before} | {after} | {row['hits']} |")
    ored = result["ored_globs"]
    lines += [
        "",
        f"{ored['terms']:,} ORed distinct `path~` globs: refused in {_s(ored['refused_s'], timeout)} "
        f'("{ored["refused"]}"); a filter at the limit ({ored["at_limit_globs"]} distinct globs) answered '
        f"in {_s(ored['at_limit_s'], timeout)} ({ored['at_limit_hits']} chunks).",
    ]
    h = result["healthz"]
    codes = ", ".join(f"{k}: {v}" for k, v in h["statuses"].items())
    lines += [
        "",
        f"`/healthz` of `hybrid-rag serve` (one worker), alone and while {h['clients']} clients sent the "
        f"hostile filters above back to back for {h['seconds']:g} s (their answers: {codes}):",
        "",
        "| `/healthz` | probes | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, key in (
        ("alone", "alone"),
        ("under hostile load", "under_load"),
        ("(the hostile queries)", "hostile_queries"),
    ):
        p = h[key]
        lines.append(
            f"| {name} | {p['n']} | {p.get('p50', 0):.1f} | {p.get('p95', 0):.1f} | {p.get('max', 0):.1f} |"
        )
    st = result["schemathesis"]
    codes = ", ".join(f"{k}: {v}" for k, v in st["statuses"].items())
    lines += [
        "",
        f"schemathesis 4 against the server on a small store, every check, {st['examples']} examples a "
        f"phase and operation (seed 25): {st['cases']} requests, "
        f"{st['failures']} failures, exit code {st['exit_code']}, {st['seconds']:.0f} s; statuses {codes}.",
    ]
    deep = result.get("deep_tree")
    if deep:  # issue 42.1
        before, after = deep["before"], deep["after"]
        walked = "walked" if before["outcome"] == "ok" else f"**{before['outcome']}**"
        outcome = (
            f"**{after['error']}**"
            if after["error"]
            else f"ingested: {after['files']} files, {after['chunks']} chunks, {after['seconds']:.1f} s"
        )
        lines += [
            "",
            f"A folder tree {deep['depth']:,} levels deep (a Markdown file at its top and bottom), "
            f"`embedding.model: auto`: before, its sampler's `Path.rglob` walk: {walked}"
            + (f" after {before['seconds']:.2f} s" if before["seconds"] is not None else "")
            + f" (the ingest exited 70); after, sampling the ingest's own listing: {outcome}"
            + (f" ({after['choice']})" if after["choice"] else "")
            + ".",
        ]
    return "\n".join(lines)
