"""Output into a pipe: a reader that goes away (`| head -1`) ends the command quietly (no
traceback, nothing in errors.log); progress into a pipe is plain lines, no escape sequences;
errors name the data dir they looked in."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HYBRID_RAG_EMBEDDING__MODEL": "fake",
        "HYBRID_RAG_HOME": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
    }


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hybrid_rag.cli", *args]


@pytest.fixture
def many_files(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(40):
        (root / f"note{i:02}.md").write_text(f"# Note {i}\n\nCompost and clay soil, note {i}.\n" * 40)
    return root


def _closed_early(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with stdout a pipe whose reader reads one line and closes it."""
    proc = subprocess.Popen(_cli(*args), env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, b"", err)


def test_query_json_into_head_ends_quietly(tmp_path, many_files):
    subprocess.run(_cli("ingest", str(many_files)), env=_env(tmp_path), check=True, capture_output=True)
    done = _closed_early(tmp_path, "query", "compost clay", "--json", "--top-k", "40", "--parent-context")
    assert done.stderr.decode() == ""
    assert done.returncode in (0, 141)
    assert not (tmp_path / "data" / "logs" / "errors.log").exists()


def test_progress_into_a_pipe_is_plain_lines(tmp_path, many_files):
    done = subprocess.run(
        _cli("ingest", str(many_files), "--progress"), env=_env(tmp_path), capture_output=True, check=True
    )
    err = done.stderr.decode()
    assert "\x1b" not in err and "\r" not in err
    assert "hybrid-rag: files 40/40 (100%)" in err.splitlines()


def test_no_index_error_names_the_data_dir(tmp_path):
    done = subprocess.run(_cli("query", "anything"), env=_env(tmp_path), capture_output=True)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        f"hybrid-rag: error: no index yet in {(tmp_path / 'data').resolve()}: run `hybrid-rag ingest PATH`"
    )
