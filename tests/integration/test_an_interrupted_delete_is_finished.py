"""kill -9 of `hybrid-rag delete` after the store committed and before the index was published: the
same delete run again or any write sees the index behind the store and publishes a version without
the deleted files (as an interrupted ingest's re-run already does). Until then a query's answer
says so in a note (it served the deleted file silently), and `stats`, a read, reports it and writes
nothing (it published, and after a BM25-first ingest embedded everything, unannounced)."""

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

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine

pytestmark = pytest.mark.integration

# the CLI, with the index build replaced by a kill -9 of the process: the exact point between
# the delete's store commit and its publication
DRIVER = textwrap.dedent(
    """\
    import os, signal, sys
    from hybrid_rag import cli
    from hybrid_rag.indices.build import IndexBuilder

    def killed(self, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    IndexBuilder.build = killed
    sys.exit(cli.main(sys.argv[1:]))
    """
)


def _cli(data: Path, *args: str) -> int:
    return main(["--data-dir", str(data), *args])


def _killed_delete(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    (corpus / "gone").mkdir(parents=True)
    (corpus / "gone" / "rotor.md").write_text("The rotor blade tip vortex raises the noise.\n")
    (corpus / "kept.md").write_text("Tomatoes grow well in the shade of the garden wall.\n")
    data = tmp_path / "data"
    assert _cli(data, "ingest", str(corpus)) == 0
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, "--data-dir", str(data), "delete", str(corpus / "gone")],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL
    return data, corpus


def _served(data: Path) -> list[str]:
    engine = Engine(fake_settings(data))
    try:
        found = engine.query("rotor blade tip vortex", top_k=5, mode="bm25")
        return [Path(c.path).name for c in found.chunks]
    finally:
        engine.close()


@pytest.fixture(autouse=True)
def _fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")


def test_the_same_delete_again_finishes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, corpus = _killed_delete(tmp_path)
    assert _served(data) == ["rotor.md"]  # the kill left the deleted file served
    assert _cli(data, "delete", str(corpus / "gone")) == 0
    assert _served(data) == []


def test_stats_reports_it_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = _killed_delete(tmp_path)
    versions = sorted(p.name for p in (data / "indices").iterdir())
    capsys.readouterr()
    assert _cli(data, "stats", "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 2 and stats["index_behind_store"] is True  # the served version's
    assert "any write" in stats["behind"] and "publishes them" in stats["behind"]
    assert sorted(p.name for p in (data / "indices").iterdir()) == versions  # nothing published
    assert _served(data) == ["rotor.md"]


def test_a_query_says_the_index_lacks_the_last_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, corpus = _killed_delete(tmp_path)
    capsys.readouterr()
    assert _cli(data, "query", "rotor blade tip vortex", "--mode", "bm25") == 0
    out = capsys.readouterr().out
    assert "rotor.md" in out and "# note: the live index lacks the store's last writes" in out
    assert _cli(data, "delete", str(corpus / "gone")) == 0
    capsys.readouterr()
    _cli(data, "query", "tomatoes garden wall", "--mode", "bm25")
    assert "lacks the store's last writes" not in capsys.readouterr().out  # published: no note


def test_another_write_finishes_it(tmp_path: Path) -> None:
    data, corpus = _killed_delete(tmp_path)
    (corpus / "new.md").write_text("A new note about bees.\n")
    assert _cli(data, "ingest", str(corpus / "new.md")) == 0
    assert _served(data) == []
