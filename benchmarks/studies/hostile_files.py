"""Hostile files and data dirs (issue 43 items 2, 3, 6, 7, 8, 12): what each case costs and gets.

Each case builds a small folder, then runs one command as a user would, in a child process whose
wall time and peak memory (``ru_maxrss`` of the child, from ``os.wait4``) are measured, with the
fake embedder (the cost is the loader's, not the model's):

* front matter (item 2, 3): YAML aliases ("billion laughs", ~600 bytes, 9^9 values), nesting 600
  deep, ``date: 0000-01-01``, ``date: 2024-02-30``; each beside a good file, ``ingest`` the folder;
* ``POST /v1/ingest`` with ``metadata`` nested 500 deep (a server in the child process);
* key files (item 6): another data dir in the folder, the configured keys file in it, a hard link
  to the keys file, indices/store/logs set inside the folder; ``ingest`` then a query for the key;
* escapes (item 7): a document and a file name holding ESC sequences and a bidi override; plain
  ``query``, ``documents`` and ``outline``, counting raw control characters written;
* permissions (item 8): ``ingest`` twice under umask 000, counting folders not 0700 and files not
  0600 in the data dir;
* Unicode (item 12): five documents writing "password" with a zero-width space, a soft hyphen, a
  word joiner, fullwidth letters and capitals; a BM25 query "reset password", documents found.

``--before DIR`` runs every case again on another checkout's ``hybrid_rag`` (``git archive REV
hybrid_rag | tar -x -C DIR``), under ``--before-memory`` MiB of address space and
``--before-timeout`` seconds (the laughs took 82 s and 3.5 GB in issue 43's probe).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SECRET = "swordfish-secret-key-0123456789"
ENV = {"HYBRID_RAG_EMBEDDING__MODEL": "fake", "HF_HUB_OFFLINE": "1"}


def _laughs() -> str:
    names = "abcdefghi"
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in itertools.pairwise(names)]
    return "\n".join(lines)


FRONT = {
    "billion laughs (YAML aliases, ~600 bytes)": _laughs(),
    "nesting 600 deep": "x: " + "[" * 600 + "]" * 600,
    "`date: 0000-01-01`": "date: 0000-01-01",
    "`date: 2024-02-30`": "date: 2024-02-30",
}

CLI = "import sys; from hybrid_rag.cli import main; sys.exit(main(sys.argv[1:]))"

SERVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from live_server import LiveServer, server_settings
from hybrid_rag.engine import Engine
from pathlib import Path
tmp = Path(sys.argv[1]); corpus = tmp / "corpus"
settings = server_settings(tmp, **{"server.ingest_roots": [str(corpus)]})
engine = Engine(settings); engine.ingest([corpus])
server = LiveServer(settings, None, engine)
deep = {}; node = deep
for _ in range(500):
    node["k"] = {}; node = node["k"]
with server.client(None) as client:
    r = client.post("/v1/ingest", json={"paths": ["."], "metadata": {"deep": deep}})
    out = {"status": r.status_code, "body": r.json()}
    if r.status_code == 202:
        for _ in range(600):
            job = client.get(f"/v1/jobs/{r.json()['id']}").json()
            if job["status"] not in ("queued", "running"):
                break
            time.sleep(0.05)
        out["job"] = {"status": job["status"], "error": job.get("error")}
log = settings.logs_dir / "errors.log"
out["errors_log"] = log.is_file() and "Traceback" in log.read_text()
server.stop()
print(json.dumps(out))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--before", help="a folder holding another checkout's hybrid_rag (before)")
    parser.add_argument("--before-memory", type=int, default=2048, help="MiB of address space, before")
    parser.add_argument("--before-timeout", type=float, default=120.0, help="seconds a case may run, before")
    parser.add_argument("--only", choices=sorted(GROUPS), action="append", help="these groups of cases only")


def _child(
    argv: list[str], cwd: Path, tree: Path, *, memory: int | None, timeout: float, umask: int | None = None
) -> dict[str, Any]:
    """Run ``argv`` with ``tree`` first on sys.path; exit code, wall s, peak MiB, stdout, stderr."""

    def limit() -> None:
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory << 20, memory << 20))
        if umask is not None:
            os.umask(umask)

    env = {**os.environ, **ENV, "PYTHONPATH": str(tree)}
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, preexec_fn=limit)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.send_signal(signal.SIGKILL)
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    with out, err:
        return {
            "exit": proc.returncode,
            "timed_out": wall > timeout,
            "seconds": round(wall, 2),
            "peak_mib": round(usage.ru_maxrss / 1024, 1),
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
        }


def _cli(tree: Path, work: Path, *args: str, **kw: Any) -> dict[str, Any]:
    return _child([sys.executable, "-c", CLI, *args], work, tree, **kw)


def _first_line(text: str, needle: str = "") -> str:
    lines = [line for line in text.splitlines() if needle in line] or text.splitlines() or [""]
    return lines[0].replace(str(Path(tempfile.gettempdir())), "/tmp")[:160]


def _documents(tree: Path, work: Path, data: Path) -> list[str]:
    got = _cli(tree, work, "--data-dir", str(data), "documents", "--json", memory=None, timeout=120)
    try:
        return sorted(Path(d["path"]).name for d in json.loads(got["stdout"])["documents"])
    except (json.JSONDecodeError, KeyError):
        return []


def _leaks(tree: Path, work: Path, data: Path) -> int:
    got = _cli(
        tree,
        work,
        "--data-dir",
        str(data),
        "query",
        SECRET,
        "--mode",
        "bm25",
        "--json",
        memory=None,
        timeout=120,
    )
    try:
        return sum(SECRET in r["text"] for r in json.loads(got["stdout"])["results"])
    except (json.JSONDecodeError, KeyError):
        return 0


def _front_matter_cases(tree: Path, base: Path, kw: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for i, (name, block) in enumerate(FRONT.items()):
        work = base / f"fm{i}"
        folder = work / "notes"
        folder.mkdir(parents=True)
        (folder / "bad.md").write_text(f"---\n{block}\n---\n# Bad\n\ntext\n")
        (folder / "good.md").write_text("# Good\n\nbees and flowers\n")
        got = _cli(tree, work, "--data-dir", str(work / "data"), "ingest", str(folder), **kw)
        stored = _documents(tree, work, work / "data") if not got["timed_out"] else []
        rows.append(
            {
                "case": f"front matter: {name}",
                **{k: got[k] for k in ("exit", "timed_out", "seconds", "peak_mib")},
                "sees": _first_line(got["stderr"], "bad.md") or _first_line(got["stderr"]),
                "outcome": f"stored: {', '.join(stored) or 'nothing'}",
            }
        )
    return rows


def _server_case(tree: Path, base: Path, kw: dict[str, Any]) -> dict[str, Any]:
    work = base / "http"
    (work / "corpus").mkdir(parents=True)
    (work / "corpus" / "a.md").write_text("# A\n\nbees\n")
    got = _child([sys.executable, "-c", SERVER, str(work), str(ROOT / "tests")], work, tree, **kw)
    try:
        answer = json.loads(got["stdout"].strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        answer = {"status": None}
    job = answer.get("job")
    message = ((answer.get("body") or {}).get("error") or {}).get("message", "")
    sees = f"HTTP {answer.get('status')}: {json.dumps(message)[:100]}"
    if job:
        sees = f"HTTP {answer['status']}, job {job['status']}: {json.dumps(job.get('error'))[:100]}"
    return {
        "case": "`POST /v1/ingest`, `metadata` nested 500 deep",
        **{k: got[k] for k in ("exit", "timed_out", "seconds", "peak_mib")},
        "sees": sees,
        "outcome": f"traceback in logs/errors.log: {'yes' if answer.get('errors_log') else 'no'}",
    }


def _keys(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{SECRET}\n")


def _key_cases(tree: Path, base: Path, kw: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []

    def project(name: str) -> tuple[Path, Path]:
        work = base / name
        folder = work / "project"
        folder.mkdir(parents=True)
        (folder / "readme.md").write_text("# Project\n\nrivers and bridges\n")
        return work, folder

    setups = {}
    work, folder = project("k1")
    other = folder / "data"
    seed = work / "seed"
    seed.mkdir()
    (seed / "n.md").write_text(f"# Seed\n\n{SECRET}\n")
    _cli(tree, work, "--data-dir", str(other), "ingest", str(seed), memory=None, timeout=120)
    _keys(other / "api_keys")
    setups["another data dir (store, indices/CURRENT, api_keys) in the folder"] = (work, folder, [])
    work, folder = project("k2")
    _keys(folder / "secrets.txt")
    setups["`server.api_keys_file` in the folder"] = (work, folder, ["HYBRID_RAG_SERVER__API_KEYS_FILE"])
    work, folder = project("k3")
    _keys(work / "data" / "api_keys")
    os.link(work / "data" / "api_keys", folder / "notes.md")
    setups["a hard link to `data/api_keys`"] = (work, folder, [])
    work, folder = project("k4")
    setups["`paths.indices_path`, `store_file`, `logs_path` in the folder"] = (work, folder, ["paths"])
    for name, (work, folder, how) in setups.items():
        env_before = dict(os.environ)
        if "HYBRID_RAG_SERVER__API_KEYS_FILE" in how:
            os.environ["HYBRID_RAG_SERVER__API_KEYS_FILE"] = str(folder / "secrets.txt")
        if "paths" in how:
            os.environ["HYBRID_RAG_PATHS__INDICES_PATH"] = str(folder / "idx")
            os.environ["HYBRID_RAG_PATHS__STORE_FILE"] = str(folder / "meta.db")
            os.environ["HYBRID_RAG_PATHS__LOGS_PATH"] = str(folder / "logs")
            _cli(
                tree, work, "--data-dir", str(work / "data"), "ingest", str(folder), memory=None, timeout=120
            )
            _cli(tree, work, "--data-dir", str(work / "data"), "query", SECRET, memory=None, timeout=120)
            (folder / "more.md").write_text("# More\n\nmore rivers\n")
        try:
            got = _cli(tree, work, "--data-dir", str(work / "data"), "ingest", str(folder), **kw)
            leaks = _leaks(tree, work, work / "data")
            stored = _documents(tree, work, work / "data")
        finally:
            os.environ.clear()
            os.environ.update(env_before)
        rows.append(
            {
                "case": f"keys: {name}",
                **{k: got[k] for k in ("exit", "timed_out", "seconds", "peak_mib")},
                "sees": _first_line(got["stdout"], "ingested"),
                "outcome": f"{len(stored)} documents stored; the key found by a query: {leaks} chunk(s)",
            }
        )
    return rows


def _escape_case(tree: Path, base: Path, kw: dict[str, Any]) -> dict[str, Any]:
    work = base / "esc"
    folder = work / "corpus"
    folder.mkdir(parents=True)
    (folder / "evil\u202egpj.py").write_text(
        'def pelican():\n    """Pelicans \x1b[2J\x1b]52;c;SGVsbG8=\x07 fly."""\n'
    )
    (folder / "notes.md").write_text("# Pelicans\n\nPelicans\x1b[31m glide \u2066over the bay.\n")
    data = str(work / "data")
    _cli(tree, work, "--data-dir", data, "ingest", str(folder), memory=None, timeout=120)
    raw = 0
    total = {"exit": 0, "timed_out": False, "seconds": 0.0, "peak_mib": 0.0}
    for argv in (["query", "pelicans"], ["documents"], ["outline", str(folder / "evil\u202egpj.py")]):
        got = _cli(tree, work, "--data-dir", data, *argv, **kw)
        text = got["stdout"] + got["stderr"]
        raw += sum(text.count(c) for c in ("\x1b", "\x07", "\u202e", "\u2066"))
        total["exit"] = max(total["exit"], got["exit"])
        total["seconds"] += got["seconds"]
        total["peak_mib"] = max(total["peak_mib"], got["peak_mib"])
    return {
        "case": "escapes: ESC sequences, OSC 52, bidi override in text and a file name "
        "(`query`, `documents`, `outline`)",
        **total,
        "seconds": round(total["seconds"], 2),
        "sees": "",
        "outcome": f"raw control characters written: {raw}",
    }


def _umask_case(tree: Path, base: Path, kw: dict[str, Any]) -> dict[str, Any]:
    work = base / "umask"
    folder = work / "corpus"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nbees\n")
    data = work / "data"
    got = _cli(tree, work, "--data-dir", str(data), "ingest", str(folder), umask=0, **kw)
    (folder / "b.md").write_text("# B\n\nmore bees\n")
    _cli(tree, work, "--data-dir", str(data), "ingest", str(folder), umask=0, memory=None, timeout=120)
    wrong = []
    for path in [data, *data.rglob("*")]:
        mode = path.lstat().st_mode & 0o777
        if mode != (0o700 if path.is_dir() else 0o600):
            wrong.append(f"{path.relative_to(work)} {oct(mode)}")
    return {
        "case": "permissions: two ingests under umask 000",
        **{k: got[k] for k in ("exit", "timed_out", "seconds", "peak_mib")},
        "sees": "",
        "outcome": f"{len(wrong)} not 0700/0600"
        + (f" ({', '.join(sorted(wrong)[:3])}, ...)" if wrong else ""),
    }


def _unicode_case(tree: Path, base: Path, kw: dict[str, Any]) -> dict[str, Any]:
    work = base / "unicode"
    folder = work / "corpus"
    folder.mkdir(parents=True)
    forms = ["pass\u200bword", "pass\u00adword", "pass\u2060word", "ｐａｓｓｗｏｒｄ", "ＰＡＳＳＷＯＲＤ"]
    for i, form in enumerate(forms):
        (folder / f"d{i}.md").write_text(f"# Note {i}\n\nChange the {form} of an account.\n")
    (folder / "other.md").write_text("# Other\n\nNothing about it here.\n")
    data = str(work / "data")
    _cli(tree, work, "--data-dir", data, "ingest", str(folder), memory=None, timeout=120)
    got = _cli(tree, work, "--data-dir", data, "query", "password", "--mode", "bm25", "--json", **kw)
    try:
        found = {Path(r["path"]).name for r in json.loads(got["stdout"])["results"] if r["score"] > 0}
    except (json.JSONDecodeError, KeyError):
        found = set()
    hits = sum(f"d{i}.md" in found for i in range(len(forms)))
    return {
        "case": "Unicode: 'password' with ZWSP, soft hyphen, word joiner, fullwidth, fullwidth capitals",
        **{k: got[k] for k in ("exit", "timed_out", "seconds", "peak_mib")},
        "sees": "",
        "outcome": f"BM25 'password' finds {hits} of {len(forms)}",
    }


def _one(case: Any) -> Any:
    return lambda tree, base, kw: [case(tree, base, kw)]


GROUPS = {
    "front_matter": _front_matter_cases,
    "http": _one(_server_case),
    "keys": _key_cases,
    "escapes": _one(_escape_case),
    "umask": _one(_umask_case),
    "unicode": _one(_unicode_case),
}


def _all(tree: Path, kw: dict[str, Any], only: list[str] | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hostile-files-") as tmp:
        for name, group in GROUPS.items():
            if not only or name in only:
                rows += group(tree, Path(tmp), kw)
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    after = _all(ROOT, {"memory": None, "timeout": 600.0}, args.only)
    before = None
    if args.before:
        before = _all(
            Path(args.before).resolve(),
            {"memory": args.before_memory, "timeout": args.before_timeout},
            args.only,
        )
    return {
        "after": after,
        "before": before,
        "before_memory": args.before_memory,
        "before_timeout": args.before_timeout,
    }


def render(result: dict[str, Any]) -> str:
    before = {r["case"]: r for r in result.get("before") or []}
    lines = [
        "| case | before: exit, s, peak MiB, outcome | after: exit, s, peak MiB | what the user sees now "
        "| outcome now |",
        "|---|---|---|---|---|",
    ]

    def cell(r: dict[str, Any]) -> str:
        stop = " (stopped)" if r["timed_out"] else ""
        return f"{r['exit']}, {r['seconds']} s{stop}, {r['peak_mib']}"

    for r in result["after"]:
        b = before.get(r["case"])
        said = f"; {b['sees']}" if b and b["sees"] and b["sees"] != r["sees"] else ""
        was = f"{cell(b)}; {b['outcome']}{said}" if b else "-"
        lines.append(f"| {r['case']} | {was} | {cell(r)} | {r['sees'] or '-'} | {r['outcome']} |")
    return "\n".join(lines).replace("\x1b", "\\x1b")
