"""Kill -9 a multi-batch ingest at random moments, run it again: no chunk lost, none duplicated, and
the work done twice is at most the one batch that was being embedded when the process died."""

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
from hybrid_rag.indices.versions import IndexVersions
from hybrid_rag.settings import Settings

pytestmark = pytest.mark.integration  # the whole module

BATCH = 8
# An ingest whose embedder says how many texts it embeds (before embedding them) and takes a
# little time over it, so that a kill lands in the middle of the work.
DRIVER = textwrap.dedent(
    """\
    import sys, time
    from hybrid_rag.models.embedders import FAKE_WINDOW_WORDS, FakeEmbedder
    from fake_settings import fake_settings
    from hybrid_rag.engine import Engine

    class Announcing(FakeEmbedder):
        def embed_passage_windows(self, texts):
            print(f"embed {len(texts)}", flush=True)
            time.sleep(0.02)
            return super().embed_passage_windows(texts)

    data, corpus, batch = sys.argv[1:4]
    settings = fake_settings(data, {"ingest.batch_chunks": int(batch)})
    engine = Engine(settings, embedder=Announcing(dimension=256, window_words=FAKE_WINDOW_WORDS))
    print("started", flush=True)
    report = engine.ingest([corpus])
    print(f"done {report.embedded} {report.reused}", flush=True)
    """
)


def _write_corpus(root: Path, rng: random.Random) -> None:
    """30 files of 1-4 chunks of random words (no two chunks alike)."""
    root.mkdir(parents=True)
    vocabulary = [f"w{rng.randrange(10**6)}" for _ in range(3000)]
    for i in range(30):
        lines = [" ".join(rng.choices(vocabulary, k=10)) for _ in range(rng.randint(10, 110))]
        (root / f"doc{i:02d}.md").write_text(f"# document {i}\n\n" + "\n".join(lines) + "\n")


def _settings(data: Path) -> Settings:
    return fake_settings(data, {"ingest.batch_chunks": BATCH})


def _stored(data: Path) -> list[tuple[str, int, int, str]]:
    with sqlite3.connect(data / "store.sqlite3") as db:
        rows = db.execute(
            "SELECT d.path, c.start_line, c.end_line, c.sha256 FROM chunks c JOIN documents d "
            "ON c.document_id = d.id ORDER BY d.path, c.position"
        ).fetchall()
    return [tuple(r) for r in rows]


def _cached(data: Path) -> int:
    if not (data / "store.sqlite3").exists():
        return 0
    with sqlite3.connect(data / "store.sqlite3") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return db.execute("SELECT count(*) FROM embeddings").fetchone()[0] if "embeddings" in tables else 0


def _run(script: Path, data: Path, corpus: Path, kill_after: int | None, rng: random.Random) -> list[str]:
    """The driver's output lines; with ``kill_after``, SIGKILL after that many ``embed`` lines."""
    errors = data.parent / f"{data.name}.stderr"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(data), str(corpus), str(BATCH)],
        stdout=subprocess.PIPE,
        stderr=errors.open("w"),
        text=True,
        env=child_env(),
    )
    assert proc.stdout is not None
    lines: list[str] = []
    if kill_after is not None:
        while sum(line.startswith("embed") for line in lines) < kill_after:
            lines.append(proc.stdout.readline().strip())
            assert lines[-1], "the driver ended before the kill"
        time.sleep(rng.uniform(0.0, 0.03))  # somewhere inside that batch, or just after it
        proc.send_signal(signal.SIGKILL)
    lines += [line.strip() for line in proc.stdout]
    proc.wait(timeout=120)
    if kill_after is None:
        assert proc.returncode == 0 and lines[-1].startswith("done"), errors.read_text()[-2000:]
    return lines


def _embedded(lines: list[str]) -> int:
    return sum(int(line.split()[1]) for line in lines if line.startswith("embed"))


@pytest.mark.integration
def test_a_killed_ingest_run_again_loses_and_repeats_at_most_one_batch(tmp_path: Path) -> None:
    rng = random.Random(13)
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, rng)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)

    reference = tmp_path / "reference"
    engine = Engine(_settings(reference))
    report = engine.ingest([corpus])
    engine.close()
    expected, total = _stored(reference), report.embedded
    batches = -(-total // BATCH)
    assert total == len({sha for *_, sha in expected}) and batches >= 8  # really many batches

    for trial, kill_after in enumerate(rng.sample(range(2, batches), 2)):
        data = tmp_path / f"data{trial}"
        killed = _run(script, data, corpus, kill_after, rng)
        assert not any(line.startswith("done") for line in killed), "killed too late"
        committed = _cached(data)
        assert 0 < _embedded(killed) - committed <= BATCH  # the work lost: the batch in flight
        assert IndexVersions(data / "indices").current() is None  # nothing half-written went live
        # every stored document is whole: its chunks are exactly the reference's for that path
        stored = _stored(data)
        paths = {row[0] for row in stored}
        assert stored == [row for row in expected if row[0] in paths]

        again = _run(script, data, corpus, None, rng)
        assert _embedded(again) == total - committed  # nothing committed is embedded again
        assert _stored(data) == expected  # no chunk lost, none twice
        engine = Engine(_settings(data))
        try:
            live = engine.indices.get()
            assert set(live.dense.ids().tolist()) == set(engine.store.all_chunk_ids().tolist())
        finally:
            engine.close()
