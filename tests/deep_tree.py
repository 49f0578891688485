"""A folder tree thousands of levels deep, made and removed without recursion (shutil.rmtree,
os.walk, Path.rglob and pytest's clean-up all recurse)."""

from __future__ import annotations

import os
from pathlib import Path


def make_deep(root: Path, depth: int, name: str = "d") -> Path:
    """``root`` with ``depth`` nested folders ``name``; the deepest folder."""
    root.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    try:
        os.chdir(root)
        for _ in range(depth):
            os.mkdir(name)
            os.chdir(name)
        return Path(os.getcwd())
    finally:
        os.chdir(cwd)


def write_deep(folder: Path, name: str, text: str) -> None:
    """Write a file in a folder whose path may be longer than the OS allows in one call."""
    cwd = os.getcwd()
    try:
        os.chdir(folder)
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)
    finally:
        os.chdir(cwd)


def remove_deep(root: Path) -> None:
    """Bottom up, without recursion."""
    stack, order = [str(root)], []
    while stack:
        folder = stack.pop()
        order.append(folder)
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                os.unlink(entry.path)
    for folder in reversed(order):
        os.rmdir(folder)
