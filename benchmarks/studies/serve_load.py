"""The HTTP API under concurrent load: ``hybrid-rag serve`` with 1 and 2 workers, 1 to 64 concurrent
clients, with and without ingest jobs writing meanwhile, against ``Engine.query`` in-process on
the same store in the same run.

Store: a synthetic corpus of Zipfian words (``hybrid_rag.evaluation.bench``'s vocabulary) in short
chunks (40-80 tokens, about one a line) with the fake embedder (256 dimensions) and near-duplicate
detection off, ingested by the engine's own ingest: the figures measure the serving path (HTTP,
JSON, threads, the retrieval pipeline over 10k chunks), not a model. Every server run starts from a
copy of the same store. Clients (asyncio + httpx, in this process) send ``POST /v1/query``
(top_k 10, hybrid) to 127.0.0.1 only, each waiting for its answer before the next, for
``--seconds`` per level. With ingest, jobs of ``--ingest-files`` new files run back to back through
``POST /v1/ingest`` for the whole level; at the end the document and chunk counts are checked
against what the jobs reported, and each ingested file is queried by its own unique words.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the studies' own helpers
from _server import wait_ready  # noqa: E402

from hybrid_rag.engine import Engine  # noqa: E402
from hybrid_rag.evaluation.bench import build_vocabulary, sample_word_ids, zipf_cdf  # noqa: E402
from hybrid_rag.settings import load_settings  # noqa: E402

KEY = "serve-load-benchmark-key-0123456789"
OVERRIDES = {  # as environment overrides, so the server processes get the same settings
    "HYBRID_RAG_EMBEDDING__MODEL": "fake",
    "HYBRID_RAG_CHUNKING__MIN_TOKENS": "40",
    "HYBRID_RAG_CHUNKING__MAX_TOKENS": "80",
    "HYBRID_RAG_CHUNKING__OVERLAP": "0.0",
    "HYBRID_RAG_DEDUPE__ENABLED": "false",
    "HYBRID_RAG_SERVER__MAX_CONCURRENCY": "64",
}
LINE_WORDS, LINES, VOCAB, SEED = 45, 20, 50_000, 20261124


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunks", type=int, default=10_000, help="about this many chunks in the store")
    parser.add_argument("--clients", default="1,4,16,64", help="concurrency levels, comma-separated")
    parser.add_argument("--workers", default="1,2", help="server worker counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=60.0, help="per level")
    parser.add_argument("--ingest-files", type=int, default=20, help="new files an ingest job adds")
    parser.add_argument("--work", default=str(ROOT / "benchmarks" / "work" / "serve_load"))


def write_docs(
    folder: Path, first: int, count: int, vocab: list[str], cdf: np.ndarray, tag: str = ""
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        rng = np.random.default_rng(SEED + i)
        lines = []
        for _ in range(LINES):
            ids = sample_word_ids(cdf, LINE_WORDS, rng)
            lines.append(" ".join(vocab[j] for j in ids))
        head = f"# doc {i}\n\n" + (f"{tag}{i} marker{tag}{i} unique{tag}{i}\n\n" if tag else "")
        (folder / f"doc{i:06d}.md").write_text(head + "\n\n".join(lines) + "\n")


def queries(vocab: list[str], cdf: np.ndarray, n: int = 200) -> list[str]:
    rng = np.random.default_rng(SEED)
    return [
        " ".join(vocab[j] for j in np.minimum(sample_word_ids(cdf, 4, rng) + 50, VOCAB - 1)) for _ in range(n)
    ]


def build_store(args: argparse.Namespace, vocab: list[str], cdf: np.ndarray) -> tuple[Path, dict[str, Any]]:
    work = Path(args.work)
    base = work / "base"
    corpus = work / "corpus"
    docs = max(1, args.chunks // LINES)
    marker = work / f"built-{docs}.ok"
    if not marker.exists():
        shutil.rmtree(work, ignore_errors=True)
        write_docs(corpus, 0, docs, vocab, cdf)
        log(f"ingesting {docs} documents into {base}")
        started = time.perf_counter()
        engine = Engine(load_settings(data_dir=base))
        engine.ingest([corpus])
        engine.close()
        marker.write_text(f"{time.perf_counter() - started:.1f}\n")
    engine = Engine(load_settings(data_dir=base))
    stats = engine.stats()
    engine.close()
    return base, {
        "documents": stats.documents,
        "chunks": stats.chunks,
        "ingest_seconds": float(marker.read_text()),
    }


def percentiles(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "p99_ms": float("nan")}
    ms = np.asarray(latencies) * 1000
    return {f"p{q}_ms": round(float(np.percentile(ms, q)), 2) for q in (50, 95, 99)}


def in_process(base: Path, texts: list[str], seconds: float, threads: int = 1) -> dict[str, Any]:
    """``Engine.query`` on ``threads`` threads of this process, each one query after another."""
    engine = Engine(load_settings(data_dir=base))
    for text in texts[:5]:  # warm: model, index, tokenizer
        engine.query(text, top_k=10)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    def loop(n: int) -> None:
        i = n
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            engine.query(texts[i % len(texts)], top_k=10)
            latencies.append(time.perf_counter() - start)
            i += threads

    workers = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    engine.close()
    return {
        "threads": threads,
        "queries": len(latencies),
        "qps": round(len(latencies) / seconds, 2),
        **percentiles(latencies),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data_dir: Path, roots: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        **OVERRIDES,
        "HYBRID_RAG_API_KEY": KEY,
        "HF_HUB_OFFLINE": "1",
        "HYBRID_RAG_SERVER__INGEST_ROOTS": f"[{roots}]",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))  # this tree's code
    cmd = [
        sys.executable,
        "-m",
        "hybrid_rag.cli",
        "--data-dir",
        str(data_dir),
        "serve",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_ready(process, url)
    return process, url


async def load(url: str, texts: list[str], clients: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    versions: set[int] = set()
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120, limits=limits) as http:

        async def client(n: int) -> None:
            i = n
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                try:
                    response = await http.post(
                        "/v1/query", json={"query": texts[i % len(texts)], "top_k": 10}
                    )
                    if response.status_code == 200:
                        latencies.append(time.perf_counter() - start)
                        versions.add(response.json()["index_version"])
                    else:
                        errors[str(response.status_code)] = errors.get(str(response.status_code), 0) + 1
                except httpx.HTTPError as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                i += clients

        started = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "queries": len(latencies),
        "qps": round(len(latencies) / elapsed, 2),
        **percentiles(latencies),
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "versions_seen": sorted(versions),
    }


def ingest_loop(
    url: str, roots: Path, stop_at: float, first: int, count: int, vocab: list[str], cdf: np.ndarray
) -> dict[str, Any]:
    """Jobs of ``count`` new files, back to back until ``stop_at``; what they reported."""
    jobs, files, chunks, tagged = 0, 0, 0, []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
        while time.perf_counter() < stop_at:
            folder = roots / f"batch{first:06d}"
            write_docs(folder, first, count, vocab, cdf, tag="zq")
            job = http.post("/v1/ingest", json={"paths": [str(folder)]}).json()
            while job["status"] in ("queued", "running"):
                time.sleep(0.2)
                job = http.get(f"/v1/jobs/{job['id']}").json()
            if job["status"] != "done":
                raise RuntimeError(f"ingest job failed: {job.get('error')}")
            jobs += 1
            files += len(job["result"]["added"])
            chunks += job["result"]["chunks_written"]
            tagged.extend(range(first, first + count))
            first += count
    return {"jobs": jobs, "files": files, "chunks": chunks, "tagged": tagged, "next": first}


async def level_with_ingest(
    url: str,
    roots: Path,
    texts: list[str],
    clients: int,
    seconds: float,
    first: int,
    count: int,
    vocab: list[str],
    cdf: np.ndarray,
) -> tuple[dict, dict]:
    stop_at = time.perf_counter() + seconds
    writer = asyncio.to_thread(ingest_loop, url, roots, stop_at, first, count, vocab, cdf)
    result, written = await asyncio.gather(load(url, texts, clients, seconds), writer)
    return result, written


def check_after(url: str, before: dict[str, int], written: dict[str, Any]) -> dict[str, Any]:
    """Nothing lost or duplicated: counts as the jobs reported; every ingested file found by its words."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
        stats = http.get("/v1/stats").json()
        missing = 0
        for i in written["tagged"]:
            found = http.post(
                "/v1/query", json={"query": f"marker{'zq'}{i} unique{'zq'}{i}", "top_k": 1, "mode": "bm25"}
            ).json()
            if not found["results"] or not found["results"][0]["path"].endswith(f"doc{i:06d}.md"):
                missing += 1
    return {
        "documents": stats["documents"],
        "documents_expected": before["documents"] + written["files"],
        "chunks": stats["chunks"],
        "chunks_expected": before["chunks"] + written["chunks"],
        "files_checked": len(written["tagged"]),
        "files_not_found": missing,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.update(OVERRIDES)
    vocab = build_vocabulary(VOCAB)
    cdf = zipf_cdf(VOCAB)
    texts = queries(vocab, cdf)
    base, store = build_store(args, vocab, cdf)
    log(f"store: {store}")
    reference = in_process(base, texts, min(args.seconds, 20.0))
    log(f"in-process Engine.query: {reference}")
    reference4 = in_process(base, texts, min(args.seconds, 20.0), threads=4)
    log(f"in-process Engine.query, 4 threads: {reference4}")
    levels = [int(c) for c in args.clients.split(",")]
    runs = []
    for workers in (int(w) for w in args.workers.split(",")):
        data = Path(args.work) / f"serve-w{workers}"
        roots = Path(args.work) / f"incoming-w{workers}"
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(roots, ignore_errors=True)
        shutil.copytree(base, data)
        roots.mkdir(parents=True)
        process, url = start_server(data, roots, workers)
        try:
            before = {"documents": store["documents"], "chunks": store["chunks"]}
            written: dict[str, Any] = {"jobs": 0, "files": 0, "chunks": 0, "tagged": [], "next": 10**6}
            rows = []
            for clients in levels:
                plain = asyncio.run(load(url, texts, clients, args.seconds))
                log(f"workers {workers}, {clients} clients: {plain}")
                rows.append({**plain, "ingest": False})
                loaded, batch = asyncio.run(
                    level_with_ingest(
                        url,
                        roots,
                        texts,
                        clients,
                        args.seconds,
                        written["next"],
                        args.ingest_files,
                        vocab,
                        cdf,
                    )
                )
                log(f"workers {workers}, {clients} clients, ingesting: {loaded} ({batch['jobs']} jobs)")
                rows.append(
                    {**loaded, "ingest": True, "ingest_jobs": batch["jobs"], "ingested_files": batch["files"]}
                )
                for key in ("jobs", "files", "chunks"):
                    written[key] += batch[key]
                written["tagged"] += batch["tagged"]
                written["next"] = batch["next"]
            check = check_after(url, before, written)
            log(f"workers {workers}: after the run {check}")
        finally:
            process.terminate()
            process.wait(60)
        runs.append({"workers": workers, "levels": rows, "ingest_check": check})
    return {
        "store": store,
        "in_process": reference,
        "in_process_4": reference4,
        "seconds_per_level": args.seconds,
        "runs": runs,
    }


def _goal(ok: bool) -> str:
    return "met" if ok else "**not met**"


def render(result: dict[str, Any]) -> str:
    ref = result["in_process"]
    ref4 = result["in_process_4"]
    store = result["store"]
    out = [
        f"Store: {store['documents']:,} synthetic documents, {store['chunks']:,} chunks (fake embedder, "
        f"short chunks, built in {store['ingest_seconds']:.0f} s); {result['seconds_per_level']:.0f} s per "
        f"level; "
        f"`POST /v1/query` top_k 10 hybrid from asyncio + httpx clients on the same machine.",
        "",
        f"In-process `Engine.query` (one thread, same store, same run): {ref['qps']} queries/s, p50 "
        f"{ref['p50_ms']} ms, p95 {ref['p95_ms']} ms, p99 {ref['p99_ms']} ms. On 4 threads of one process: "
        f"{ref4['qps']} queries/s, p50 {ref4['p50_ms']} ms, p95 {ref4['p95_ms']} ms.",
        "",
        "| workers | clients | ingest jobs running | queries/s | p50 ms | p95 ms | p99 ms | errors "
        "| versions seen |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run_ in result["runs"]:
        for row in run_["levels"]:
            jobs = (
                f"yes ({row['ingest_jobs']} jobs, {row['ingested_files']} files)" if row["ingest"] else "no"
            )
            seen = row["versions_seen"]
            versions = (
                ", ".join(f"v{v}" for v in seen)
                if len(seen) <= 3
                else f"v{seen[0]} to v{seen[-1]} ({len(seen)})"
            )
            out.append(
                f"| {run_['workers']} | {row['clients']} | {jobs} | {row['qps']} | {row['p50_ms']} | "
                f"{row['p95_ms']} | {row['p99_ms']} | {row['errors']} | {versions} |"
            )
    out += [
        "",
        "| workers | documents (expected) | chunks (expected) | ingested files found by a query |",
        "|---|---|---|---|",
    ]
    for run_ in result["runs"]:
        c = run_["ingest_check"]
        out.append(
            f"| {run_['workers']} | {c['documents']:,} ({c['documents_expected']:,}) | {c['chunks']:,} "
            f"({c['chunks_expected']:,}) | {c['files_checked'] - c['files_not_found']} of "
            f"{c['files_checked']} |"
        )
    rows = [(r["workers"], row) for r in result["runs"] for row in r["levels"]]
    errors = sum(row["errors"] for _, row in rows)
    at4 = [row["p50_ms"] for w, row in rows if row["clients"] == 4 and not row["ingest"] and w == 1]
    ratio = at4[0] / ref["p50_ms"] if at4 and ref["p50_ms"] else float("nan")
    ratio4 = at4[0] / ref4["p50_ms"] if at4 and ref4["p50_ms"] else float("nan")
    peak = {w: max(row["qps"] for ww, row in rows if ww == w and not row["ingest"]) for w, _ in rows}
    intact = all(
        r["ingest_check"]["documents"] == r["ingest_check"]["documents_expected"]
        and r["ingest_check"]["chunks"] == r["ingest_check"]["chunks_expected"]
        and r["ingest_check"]["files_not_found"] == 0
        for r in result["runs"]
    )
    scaling = " vs ".join(f"{peak[w]} ({w} worker{'s' if w > 1 else ''})" for w in sorted(peak))
    grows = len(peak) < 2 or peak[max(peak)] > peak[min(peak)] * 1.1
    out += [
        "",
        "| goal | measured | |",
        "|---|---|---|",
        f"| zero errors at every level | {errors} errors | {_goal(errors == 0)} |",
        f"| p50 at 4 clients within 1.5x of in-process | {ratio:.2f}x of one in-process thread, "
        f"{ratio4:.2f}x of 4 in-process threads (1 worker, no ingest) | {_goal(ratio <= 1.5)} |",
        f"| throughput grows with --workers | peak queries/s {scaling} | {_goal(grows)} |",
        f"| nothing lost or duplicated by the concurrent ingest | counts and queries above "
        f"| {_goal(intact)} |",
    ]
    return "\n".join(out)
