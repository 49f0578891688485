"""An ingest of a folder in a git work tree records ``HEAD`` in the version's manifest; ``status``
then says, beside its own walk, how far ``HEAD`` moved and what git lists as touched, modified and
untracked (``ingest/git.py``). Outside a work tree, or with no git at all, there is no git line
and nothing fails."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.indices.live import open_versions

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(root: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "HOME": str(root),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(corpus: Path) -> Path:
    _git(corpus, "init", "-q", "-b", "main")
    _git(corpus, "add", "-A")
    _git(corpus, "commit", "-q", "-m", "first")
    return corpus


def test_the_indexed_commit_is_kept_in_the_manifest(engine: Engine, repo: Path) -> None:
    engine.ingest([repo])
    versions = open_versions(engine.index_config)
    git = versions.manifest(versions.require_current())["git"]
    assert git == {"top": str(repo.resolve()), "commit": _git(repo, "rev-parse", "HEAD"), "branch": "main"}
    clean = engine.disk_status()
    assert clean.clean and clean.git is not None
    assert clean.git.commits == 0 and clean.git.modified == () and clean.git.untracked == ()
    assert "HEAD is still there" in clean.git.summary()


def test_status_lists_commits_touched_modified_and_untracked_files(engine: Engine, repo: Path) -> None:
    engine.ingest([repo])
    indexed = _git(repo, "rev-parse", "HEAD")
    (repo / "src" / "geometry.py").write_text("def area(r):\n    return 3 * r * r\n")
    _git(repo, "commit", "-q", "-am", "second")
    (repo / "docs" / "garden.md").write_text("# Garden\n\nRewritten, not committed.\n")
    (repo / "notes.txt").write_text("New and untracked.\n")
    found = engine.disk_status()
    assert found.changed == ("docs/garden.md", "src/geometry.py") and found.new == ("notes.txt",)
    git = found.git
    assert git is not None and git.indexed.commit == indexed
    assert git.commits == 1 and git.committed == ("src/geometry.py",)
    assert git.modified == ("docs/garden.md",) and git.untracked == ("notes.txt",)
    assert git.summary().startswith(f"git: indexed at {indexed[:10]} (main); HEAD is 1 commit(s) later")
    data = found.to_dict()["git"]
    assert data["commits"] == 1 and data["counts"] == {"committed": 1, "modified": 1, "untracked": 1}


def test_a_rewritten_history_is_said_not_counted(engine: Engine, repo: Path) -> None:
    engine.ingest([repo])
    (repo / "notes.txt").write_text("Amended in.\n")
    _git(repo, "add", "notes.txt")
    _git(repo, "commit", "-q", "--amend", "-m", "first, amended")
    git = engine.disk_status().git
    assert git is not None and git.commits is None
    assert "does not descend from it" in git.summary()


def test_the_cli_prints_the_git_line_and_json_carries_it(
    settings, repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    args = ["--data-dir", str(settings.data_dir)]
    with_engine = Engine(settings)
    with_engine.ingest([repo])
    with_engine.close()
    _git(repo, "checkout", "-q", "-b", "topic")
    capsys.readouterr()
    assert main([*args, "status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("git: indexed at ") and out[-2].endswith(
        "HEAD is still there, on topic; git status: 0 modified, 0 untracked"
    )
    assert out[-1].startswith("up to date since the index was built")
    assert main([*args, "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["git"]["head"]["branch"] == "topic"


def test_outside_a_work_tree_or_without_git_there_is_no_git_line(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ingest([corpus])  # not a repository
    versions = open_versions(engine.index_config)
    assert "git" not in versions.manifest(versions.require_current())
    assert engine.disk_status().git is None
    _git(corpus, "init", "-q", "-b", "main")
    _git(corpus, "add", "-A")
    _git(corpus, "commit", "-q", "-m", "first")
    monkeypatch.setenv("PATH", str(corpus / "no-such-bin"))  # git is not on the PATH
    (corpus / "notes.txt").write_text("More.\n")
    report = engine.ingest([corpus])
    assert report.build is not None
    assert "git" not in versions.manifest(versions.require_current())
    assert engine.disk_status().git is None
