"""The folder walk has no recursion: a tree nested 1,500 levels deep is ingested whole."""

from __future__ import annotations

import os

from deep_tree import remove_deep

from hybrid_rag.ingest.loaders import iter_files
from hybrid_rag.settings import LoadingSettings
from hybrid_rag.types import LoadedFile


def test_a_very_deep_tree(tmp_path) -> None:
    root = tmp_path / "deep"
    root.mkdir()
    cwd = os.getcwd()
    try:
        os.chdir(root)
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
        with open("bottom.md", "w") as f:
            f.write("# the bottom\n\nfound it\n")
        os.chdir(cwd)
        (root / "top.md").write_text("# top\n")
        items = list(iter_files([root], LoadingSettings()))
    finally:
        os.chdir(cwd)
        remove_deep(root)  # before pytest's clean-up, which would recurse
    loaded = [i for i in items if isinstance(i, LoadedFile)]
    assert sorted(p.path.rsplit("/", 1)[-1] for p in loaded) == ["bottom.md", "top.md"]
    bottom = next(p.path for p in loaded if p.path.endswith("bottom.md"))
    assert bottom.split("/").count("d") == 1500
