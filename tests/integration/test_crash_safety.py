"""Kill ingest, rebuild and rollback (and the garbage collection a build ends with) at random
moments: the store and the live index stay consistent and usable, and every kept version still
reads all of its chunks from the store (nothing committed is lost)."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fake_settings import child_env, fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.indices.live import load_version
from hybrid_rag.indices.versions import IndexVersions
from hybrid_rag.settings import Settings

pytestmark = pytest.mark.integration  # the whole module

DRIVER = textwrap.dedent(
    """\
    import sys, time
    from fake_settings import fake_settings
    from hybrid_rag.engine import Engine

    settings = fake_settings(sys.argv[1])
    engine = Engine(settings)

    def progress(stage, done, total):
        print(f"stage {stage} {done}/{total}", flush=True)

    print("started", flush=True)
    if sys.argv[2] == "rebuild":
        engine.rebuild()
    elif sys.argv[2] == "rollback":
        engine.rollback(engine.ingestor.builder.versions.versions()[0])
    else:
        engine.ingest([sys.argv[2]], progress=progress)
    print("done", flush=True)
    """
)


def _write_corpus(root: Path, rng: random.Random, generation: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "rotor",
        "wing",
        "flow",
        "shock",
        "heat",
        "boundary",
        "layer",
        "pressure",
    ]
    for i in range(60):
        path = root / f"doc{i:03d}.md"
        if rng.random() < 0.1 and path.exists():
            path.unlink()  # deleted files
            continue
        if rng.random() < 0.5 or not path.exists():
            body = "\n".join(" ".join(rng.choices(words, k=12)) for _ in range(rng.randint(5, 120)))
            path.write_text(f"# doc {i} generation {generation}\n\n{body}\n")


def _check_consistent_and_usable(settings: Settings) -> None:
    if settings.store_path.exists():
        with sqlite3.connect(settings.store_path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    engine = Engine(settings)
    try:
        if IndexVersions(settings.indices_dir).current() is None:
            return
        live = engine.indices.get()  # loads: checksums, counts and model all verified
        assert len(live.dense) == len(live.bm25) == live.manifest["chunks"]
        versions = engine.ingestor.builder.versions
        for version in versions.versions():  # each kept version is a snapshot the store still holds
            kept = load_version(versions, version, engine.index_config, engine.embedder)
            ids = kept.dense.ids().tolist()
            assert len(engine.store.chunks(ids)) == len(ids), f"v{version} lost chunks"
        result = engine.query("rotor wing flow", top_k=5)
        stored = engine.store.chunks(c.id for c in result.chunks)
        assert all(c.id in stored and stored[c.id].text == c.text for c in result.chunks)
    finally:
        engine.close()


@pytest.mark.integration
def test_ingest_and_rebuild_killed_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(1234)
    data, corpus = tmp_path / "data", tmp_path / "corpus"
    settings = fake_settings(data)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = child_env()
    killed: list[str] = []
    work_seconds, work_lines = None, 0
    for generation in range(8):
        _write_corpus(corpus, rng, generation)
        target = {2: "rebuild", 3: "rollback"}.get(generation % 4, str(corpus))
        proc = subprocess.Popen(
            [sys.executable, str(script), str(data), target],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        start = time.monotonic()
        if work_seconds is None:  # the first run completes: it measures how long the work takes
            lines = [line.strip() for line in proc.stdout]
            assert proc.wait(timeout=300) == 0 and lines[-1] == "done"
            work_seconds, work_lines = time.monotonic() - start, len(lines) - 1
        else:
            seen = ["started"]
            if target in ("rebuild", "rollback"):  # no progress lines: a random moment
                time.sleep(rng.uniform(0.0, work_seconds))
            else:  # after a random progress line of the first half (an incremental run has fewer),
                for _ in range(rng.randint(1, max(1, work_lines // 2))):  # then a little later
                    seen.append(proc.stdout.readline().strip())
                    if seen[-1] in ("done", ""):
                        break
                time.sleep(rng.uniform(0.0, 0.05))
            proc.send_signal(signal.SIGKILL)
            seen += [line.strip() for line in proc.stdout]
            proc.wait(timeout=60)
            killed.append(next(line for line in reversed(seen) if line))
        _check_consistent_and_usable(settings)

    # one complete ingest afterwards brings store and index exactly in line with the folder
    engine = Engine(settings)
    try:
        engine.ingest([corpus])
        on_disk = {str(p.resolve()) for p in corpus.glob("*.md")}
        assert {d.path for d in engine.store.documents()} == on_disk
        live = engine.indices.get()
        store_ids = set(engine.store.all_chunk_ids().tolist())
        assert set(live.dense.ids().tolist()) == store_ids == set(live.bm25.ids().tolist())
        assert not engine.ingestor.builder.is_stale()
    finally:
        engine.close()
    assert sum(1 for where in killed if where != "done") >= 3, killed  # really killed mid-work
