"""Ctrl-C (SIGINT) during `hybrid-rag ingest`: it stops after the current batch with one line on
stderr and exit code 130; what it committed is whole, nothing went live, and a re-run finishes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.indices.versions import IndexVersions

pytestmark = pytest.mark.integration  # the whole module

# the CLI, with a fake embedder that takes a moment per batch and says when it starts one
DRIVER = textwrap.dedent(
    """\
    import sys, time
    import hybrid_rag.engine
    from hybrid_rag.cli import main
    from hybrid_rag.models.embedders import FAKE_WINDOW_WORDS, FakeEmbedder

    class Slow(FakeEmbedder):
        def embed_passage_windows(self, texts):
            print(f"embed {len(texts)}", flush=True)
            time.sleep(0.3)
            return super().embed_passage_windows(texts)

    hybrid_rag.engine.make_embedder = lambda _settings: Slow(dimension=256, window_words=FAKE_WINDOW_WORDS)
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.integration
def test_ctrl_c_stops_after_the_batch_with_one_line_and_exit_130(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(12):
        lines = [f"note {i} line {n} about rotor {i * 100 + n} and wing {n * 7 + i}" for n in range(60)]
        (corpus / f"note{i:02d}.md").write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "HYBRID_RAG_EMBEDDING__MODEL": "fake",
        "HYBRID_RAG_INGEST__BATCH_CHUNKS": "2",
    }
    proc = subprocess.Popen(
        [sys.executable, str(script), "--data-dir", str(data), "ingest", "--quiet", str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("embed")  # the first batch is being embedded
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hybrid-rag: interrupted: "), err
    assert "again" in lines[0]
    assert sum(line.startswith("embed") for line in ["embed", *out.splitlines()]) <= 2  # no batch after

    settings = fake_settings(data)
    assert IndexVersions(settings.indices_dir).current() is None  # nothing half-written went live
    engine = Engine(settings)
    try:
        documents = {d.path for d in engine.store.documents()}
        assert 0 < len(documents) < 12
        assert {c.path for c in engine.store.iter_chunks()} == documents  # each one whole
    finally:
        engine.close()

    again = subprocess.run(
        [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data), "ingest", str(corpus), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert len(report["added"]) == 12 - len(documents) and report["index_version"] == 1
