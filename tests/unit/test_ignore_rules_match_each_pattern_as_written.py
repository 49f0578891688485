"""``loading.ignore``'s rules give the same verdict whether a pattern is tested on its own (the
reference: fnmatch over the path's last components) or in the walk's combined form (one-part
names in a set, one-part globs in one regex), for names, globs, folder-only and anchored patterns."""

from __future__ import annotations

import fnmatch
import itertools

from hybrid_rag.ingest.loaders import IgnoreRules

PATTERNS = [
    "node_modules",
    "*.egg-info",
    "build/",
    "/dist",
    "data/indices",
    ".git",
    "*.min.js",
    "__pycache__/",
    "[Bb]in",
    "a?c",
    "docs/_build/",
    "/top/inner",
]
NAMES = [
    "node_modules",
    "x.egg-info",
    "build",
    "dist",
    "data",
    "indices",
    ".git",
    "app.min.js",
    "__pycache__",
    "Bin",
    "bin",
    "abc",
    "docs",
    "_build",
    "top",
    "inner",
    "src",
    "main.py",
]


def _reference(pattern: str, parts: tuple[str, ...], rel_len: int, is_dir: bool) -> bool:
    anchored, dir_only = pattern.startswith("/"), pattern.endswith("/")
    pat = tuple(p for p in pattern.strip("/").split("/") if p)
    if (dir_only and not is_dir) or (anchored and len(pat) != rel_len) or len(pat) > len(parts):
        return False
    return all(fnmatch.fnmatchcase(n, p) for n, p in zip(parts[len(parts) - len(pat) :], pat, strict=True))


def test_the_combined_rules_agree_with_each_pattern_alone() -> None:
    rules = IgnoreRules(PATTERNS)
    checked = 0
    for depth in (1, 2):
        for rel in itertools.product(NAMES, repeat=depth):
            parts = ("home", "user", *rel)
            for is_dir in (False, True):
                want = any(_reference(p, parts, depth, is_dir) for p in PATTERNS)
                assert rules.matches(parts, depth, is_dir) == want, (rel, is_dir)
                checked += want
    assert checked > 100  # the verdicts are not all "kept"


def test_a_folder_only_pattern_does_not_ignore_a_file_of_that_name() -> None:
    rules = IgnoreRules(["build/", "*.egg-info/"])
    assert rules.matches(("r", "build"), 1, True) and not rules.matches(("r", "build"), 1, False)
    assert rules.matches(("r", "x.egg-info"), 1, True) and not rules.matches(("r", "x.egg-info"), 1, False)
