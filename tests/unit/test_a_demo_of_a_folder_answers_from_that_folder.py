"""``bash scripts/demo.sh PATH "QUESTION"`` ingests PATH into a data dir of its own (one per folder),
so the answer comes from that folder and never from this repository's index (which the default demo
builds in ./data); a relative PATH is the caller's, not the repository's. Run against a copy of the
script with a no-op setup and a ``hybrid-rag`` that records its arguments (no model, no install)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def fake_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "demo.sh", repo / "scripts" / "demo.sh")
    (repo / "scripts" / "setup.sh").write_text("#!/usr/bin/env bash\nexit 0\n")
    log = tmp_path / "calls.log"
    tool = repo / ".venv" / "bin" / "hybrid-rag"
    tool.parent.mkdir(parents=True)
    tool.write_text(f'#!/usr/bin/env bash\necho "$PWD $*" >> {log}\n')
    tool.chmod(0o755)
    return repo, log


def demo(repo: Path, cwd: Path, *args: str) -> list[str]:
    subprocess.run(["bash", str(repo / "scripts" / "demo.sh"), *args], cwd=cwd, check=True, env=os.environ)
    return (repo.parent / "calls.log").read_text().splitlines()


def data_dir(call: str) -> str | None:
    words = call.split()
    return words[words.index("--data-dir") + 1] if "--data-dir" in words else None


def test_the_default_demo_uses_the_repositorys_data_dir(tmp_path: Path) -> None:
    repo, _ = fake_repo(tmp_path)
    calls = demo(repo, repo)
    assert [c.split()[1:3] for c in calls] == [["ingest", "."], ["ask", "How"]]
    assert {data_dir(c) for c in calls} == {None}


def test_a_folder_gets_a_data_dir_of_its_own(tmp_path: Path) -> None:
    repo, log = fake_repo(tmp_path)
    (tmp_path / "mine" / "notes").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    calls = demo(repo, tmp_path / "mine", "notes", "what is in my notes?")
    ingest, ask = calls
    assert ingest.split()[-1] == str(tmp_path / "mine" / "notes")  # the caller's relative path
    assert data_dir(ingest) == data_dir(ask) is not None
    assert "ask what is in my notes?" in ask
    log.unlink()
    again = demo(repo, tmp_path, "mine/notes", "again?")
    assert data_dir(again[0]) == data_dir(ingest)  # the same folder: the same data dir
    log.unlink()
    other = demo(repo, tmp_path, "other", "q?")
    assert data_dir(other[0]) not in (None, data_dir(ingest))
    assert (repo / str(data_dir(ingest))).resolve().is_relative_to(repo.resolve() / "data")  # gitignored
    assert ingest.split()[0] == str(repo)  # run from the repository root, as the default demo


def test_the_first_answer_comes_while_the_ingest_is_still_embedding(tmp_path: Path) -> None:
    """An ingest whose BM25 version is live (``indices/CURRENT``) and still running: the demo asks
    then (``query --top-k 3``), and asks for the cited context once the ingest is done."""
    repo, log = fake_repo(tmp_path)
    tool = repo / ".venv" / "bin" / "hybrid-rag"
    tool.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$PWD $*" >> {log}\n'
        'if [ "$1" = ingest ]; then mkdir -p data/indices && echo 1 > data/indices/CURRENT; sleep 3;'
        f' echo "$PWD ingest done" >> {log}; fi\n'
    )
    calls = [c.split(maxsplit=1)[1] for c in demo(repo, repo)]
    assert calls[0] == "ingest ."
    assert calls[1].startswith("query How") and calls[1].endswith("--top-k 3")
    assert calls[2:] == ["ingest done", "ask How does reciprocal rank fusion break ties between chunks?"]
