"""Symbolic links inside an ingested folder (ingest/symlinks.py): not followed by default; with
`inside` followed to targets inside the ingested root (read once, under the real path); a link
leading out is followed only with `outside` (under the link's path); loops are refused."""

from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.ingest.loaders import iter_files
from hybrid_rag.settings import LoadingSettings
from hybrid_rag.types import LoadedFile, SkippedFile


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "docs" / "v2").mkdir(parents=True)
    (root / "docs" / "v2" / "guide.md").write_text("# Guide\n\nversion two\n")
    (root / "docs" / "latest").symlink_to(root / "docs" / "v2")  # a folder inside the root
    (root / "readme.md").symlink_to(root / "docs" / "v2" / "guide.md")  # a file inside the root
    (root / "docs" / "loop").symlink_to(root / "docs")  # an enclosing folder
    (root / "dangling").symlink_to(root / "nowhere")
    outside = tmp_path / "shared"
    outside.mkdir()
    (outside / "notes.md").write_text("# Shared\n\nfrom outside\n")
    (root / "shared").symlink_to(outside)
    return root


def _walk(root: Path, policy: str) -> tuple[set[str], dict[str, str]]:
    items = list(iter_files([root], LoadingSettings(follow_symlinks=policy)))
    loaded = {Path(i.path).relative_to(root).as_posix() for i in items if isinstance(i, LoadedFile)}
    skipped = {
        Path(i.path).relative_to(root).as_posix(): i.reason for i in items if isinstance(i, SkippedFile)
    }
    return loaded, skipped


def test_links_are_not_followed_by_default(tree):
    loaded, skipped = _walk(tree, "no")
    assert loaded == {"docs/v2/guide.md"}
    assert set(skipped) == {"docs/latest", "docs/loop", "readme.md", "dangling", "shared"}
    assert all("--follow-symlinks" in r for r in skipped.values())


def test_inside_follows_links_within_the_root_once_and_refuses_loops_and_the_outside(tree):
    loaded, skipped = _walk(tree, "inside")
    assert loaded == {"docs/v2/guide.md"}  # latest/ and readme.md lead to it: read once, real path
    assert skipped["docs/loop"].startswith("symbolic link loop")
    assert skipped["dangling"].startswith("broken symbolic link")
    assert "outside the ingested root" in skipped["shared"] and "=outside" in skipped["shared"]


def test_outside_follows_links_anywhere_under_the_links_path(tree):
    loaded, skipped = _walk(tree, "outside")
    assert loaded == {"docs/v2/guide.md", "shared/notes.md"}
    assert skipped["docs/loop"].startswith("symbolic link loop")


def test_a_link_back_to_the_root_from_outside_is_a_loop(tree, tmp_path):
    (tmp_path / "shared" / "back").symlink_to(tree)
    loaded, skipped = _walk(tree, "outside")
    assert "shared/notes.md" in loaded and skipped["shared/back"].startswith("symbolic link loop")


def test_the_cli_flag_follows_inside_links(tree, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.setenv("HYBRID_RAG_HOME", str(tmp_path / "data"))
    assert main(["ingest", str(tree), "--follow-symlinks"]) == 0
    err = capsys.readouterr().err
    assert "outside the ingested root" in err and "symbolic link loop" in err
    assert main(["ingest", str(tree), "--follow-symlinks=outside", "--dry-run"]) == 0
    assert "shared/notes.md" in capsys.readouterr().out


def test_a_file_outside_is_stored_under_the_links_path_and_a_second_ingest_changes_nothing(
    tree, tmp_path, monkeypatch, capsys
):
    # the walk named it under the link, but the ingest read it again under its real path: every
    # ingest then found a "new" file, and the third dropped it as a near-duplicate of itself
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.setenv("HYBRID_RAG_HOME", str(tmp_path / "data"))
    for _ in range(3):
        assert main(["ingest", str(tree), "--follow-symlinks=outside"]) == 0
    out = capsys.readouterr().out
    assert out.count("ingested: 0 new, 0 changed, 0 deleted, 2 unchanged") == 2, out
    assert main(["documents", "--absolute-paths"]) == 0
    listed = capsys.readouterr().out
    assert (tree / "shared" / "notes.md").as_posix() in listed
    assert (tmp_path / "shared" / "notes.md").as_posix() not in listed
