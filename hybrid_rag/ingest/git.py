"""What git says about an ingested folder: the commit it was indexed at, and what moved since.

An ingest of a folder inside a git work tree records ``HEAD`` (commit, branch, the work tree's
top) in the index version's manifest (``indices/build.py``). ``hybrid-rag status`` then reports
beside its own walk what git says: how many commits ``HEAD`` is past the indexed one, the files
those commits touched, and the files ``git status`` lists as modified or untracked. The walk by
size and mtime stays the answer to "what changed" (it also sees files git ignores, and a commit
of changes that were already indexed changes nothing); git's lists say why.

git is asked through its command line, read only (``GIT_OPTIONAL_LOCKS=0``: a status never
writes the repository's index), with a time limit. No git on the PATH, a folder outside a work
tree, or a git that fails: no git facts (``None``), never an error for the ingest or the status.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIMEOUT_S = 10.0
MAX_LISTED = 200  # paths a report lists per kind (the counts are whole)


@dataclass(frozen=True)
class GitHead:
    """Where a work tree stood: its top folder, ``HEAD``'s commit and branch (None when detached)."""

    top: str
    commit: str
    branch: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"top": self.top, "commit": self.commit, "branch": self.branch}

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> GitHead | None:
        top, commit = raw.get("top"), raw.get("commit")
        if not isinstance(top, str) or not isinstance(commit, str):
            return None
        branch = raw.get("branch")
        return GitHead(top, commit, branch if isinstance(branch, str) else None)


@dataclass(frozen=True)
class GitReport:
    """What git says since the indexed commit: ``commits`` past it (None when git does not know the
    indexed commit any more: a rebase, a shallow clone), the files they touched, and the work
    tree's modified and untracked files (paths relative to the top)."""

    indexed: GitHead
    head: GitHead
    commits: int | None
    committed: tuple[str, ...]
    modified: tuple[str, ...]
    untracked: tuple[str, ...]

    def summary(self) -> str:
        indexed = f"git: indexed at {self.indexed.commit[:10]}" + (
            f" ({self.indexed.branch})" if self.indexed.branch else ""
        )
        if self.head.commit == self.indexed.commit:
            moved = "HEAD is still there"
        elif self.commits is None:
            moved = f"HEAD is now {self.head.commit[:10]}, which does not descend from it"
        else:
            moved = (
                f"HEAD is {self.commits} commit(s) later ({self.head.commit[:10]}), "
                f"{len(self.committed)} file(s) touched"
            )
        if self.head.branch != self.indexed.branch:
            moved += f", on {self.head.branch or 'a detached HEAD'}"
        work = f"git status: {len(self.modified)} modified, {len(self.untracked)} untracked"
        return f"{indexed}; {moved}; {work}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "indexed": self.indexed.to_dict(),
            "head": self.head.to_dict(),
            "commits": self.commits,
            "committed": list(self.committed[:MAX_LISTED]),
            "modified": list(self.modified[:MAX_LISTED]),
            "untracked": list(self.untracked[:MAX_LISTED]),
            "counts": {
                "committed": len(self.committed),
                "modified": len(self.modified),
                "untracked": len(self.untracked),
            },
            "summary": self.summary(),
        }


def _git(cwd: str | Path, *args: str) -> str | None:
    """``git args`` in ``cwd``; its stdout, or None when git is missing, fails or takes too long."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape")


def git_head(paths: Sequence[str | Path]) -> GitHead | None:
    """``HEAD`` of the one work tree holding every folder of ``paths`` (files: their folders);
    None when they are not all in one work tree or the repository has no commit yet."""
    folders = {(Path(p) if Path(p).is_dir() else Path(p).parent).resolve() for p in paths}
    if not folders:
        return None
    heads = set()
    for folder in folders:
        if not folder.is_dir():
            return None
        out = _git(folder, "rev-parse", "--show-toplevel", "HEAD")
        if out is None:
            return None
        lines = out.splitlines()
        if len(lines) != 2:
            return None
        heads.add((lines[0], lines[1]))
    if len(heads) != 1:
        return None
    top, commit = heads.pop()
    branch = _git(top, "symbolic-ref", "--quiet", "--short", "HEAD")
    return GitHead(top, commit, branch.strip() if branch else None)


def _paths(out: str) -> tuple[str, ...]:
    return tuple(sorted(p for p in out.split("\0") if p))


def git_report(indexed: GitHead) -> GitReport | None:
    """What moved in ``indexed``'s work tree since; None when git cannot answer (the folder is gone
    or no longer a work tree)."""
    if not Path(indexed.top).is_dir():
        return None
    now = git_head([indexed.top])
    if now is None or now.top != indexed.top:
        return None
    commits: int | None = 0
    committed: tuple[str, ...] = ()
    if now.commit != indexed.commit:
        count = _git(indexed.top, "rev-list", "--count", f"{indexed.commit}..{now.commit}")
        ancestor = _git(indexed.top, "merge-base", "--is-ancestor", indexed.commit, now.commit) is not None
        commits = int(count.strip()) if count is not None and ancestor else None
        diff = _git(indexed.top, "diff", "--name-only", "-z", "--no-renames", indexed.commit, now.commit)
        committed = _paths(diff) if diff is not None else ()
    status = _git(indexed.top, "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames")
    if status is None:
        return None
    modified, untracked = [], []
    for entry in status.split("\0"):
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        (untracked if code == "??" else modified).append(path)
    return GitReport(indexed, now, commits, committed, tuple(sorted(modified)), tuple(sorted(untracked)))
