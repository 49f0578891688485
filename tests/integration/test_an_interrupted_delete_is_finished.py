"""kill -9 of `hybrid-rag delete` after the store committed and before the index was published: the
same delete run again, any write, or `stats` sees the index behind the store and publishes a
version without the deleted files (as an interrupted ingest's re-run already does)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

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
    engine = Engine(Settings().with_overrides({"paths.data_dir": str(data), "embedding.model": "fake"}))
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


def test_stats_finishes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = _killed_delete(tmp_path)
    capsys.readouterr()
    assert _cli(data, "stats", "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 1 and stats["index_behind_store"] is False
    assert _served(data) == []


def test_another_write_finishes_it(tmp_path: Path) -> None:
    data, corpus = _killed_delete(tmp_path)
    (corpus / "new.md").write_text("A new note about bees.\n")
    assert _cli(data, "ingest", str(corpus / "new.md")) == 0
    assert _served(data) == []
