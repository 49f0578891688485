"""The repository benchmark's judged corpus (``benchmarks/studies/_repo_corpus.py``): a target's
docstring is removed and its line range taken from the rewritten file, a body that was only a
docstring stays valid, a sentence found elsewhere in the repository or shared by two functions
is dropped, dunders and short sentences are never queries, and relevance is file + overlap."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from studies._repo_corpus import (  # noqa: E402
    Target,
    build_corpus,
    first_sentence,
    is_test_path,
    overlaps,
    relative,
    strip_docstrings,
)

SOURCE = '''import os


class Box:
    @property
    def size(self):
        """Return the number of items in the box.

        More words here.
        """
        return 3

    def __len__(self):
        """Return the number of items, as len does."""
        return 3

    def empty(self):
        """Tell whether the box holds no items at all."""


def short():
    """Too short."""
    return 1
'''


def test_the_first_sentence_is_cut_after_its_full_stop() -> None:
    assert first_sentence("Return x. Then more.\n\nOther.") == "Return x."
    assert first_sentence("  Wrapped\n  over lines\n\nno") == "Wrapped over lines"


def test_a_stripped_docstring_leaves_the_function_and_its_new_line_range() -> None:
    rewritten, ranges = strip_docstrings(SOURCE, {0, 2})
    ast.parse(rewritten)  # still valid Python: an emptied body got ...
    lines = rewritten.splitlines()
    start, end = ranges[0]
    assert lines[start - 1].strip() == "@property" and lines[end - 1].strip() == "return 3"
    assert "Return the number of items in the box" not in rewritten
    start, end = ranges[2]
    assert lines[start - 1].strip() == "def empty(self):" and lines[end - 1].strip() == "..."
    assert "Return the number of items, as len does." in rewritten  # not a target: kept


def test_targets_skip_dunders_short_and_shared_or_repeated_sentences(tmp_path: Path) -> None:
    src = tmp_path / "proj-1.0"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "box.py").write_text(SOURCE)
    (src / "pkg" / "twin.py").write_text(
        'def a():\n    """Do the same thing twice over here."""\n\n\n'
        'def b():\n    """Do the same thing twice over here."""\n'
    )
    (src / "docs.rst").write_text("Tell whether the box holds\n no items at all.\n")
    targets, counts = build_corpus(src, tmp_path / "corpus", cap=10, seed=0)
    assert [t.name for t in targets] == ["Box.size"]
    assert counts["shared_sentence"] == 2 and counts["still_in_corpus"] == 1
    rewritten = (tmp_path / "corpus" / "pkg" / "box.py").read_text().splitlines()
    assert rewritten[targets[0].start_line - 1].strip() == "@property"


def test_relevance_is_the_same_file_and_overlapping_lines() -> None:
    target = Target("q", "x", "src/a.py", "f", 10, 20)
    root = Path("/w/corpus/proj-1.0")
    assert overlaps(target, relative("/w/corpus/proj-1.0/src/a.py", root), 18, 40)
    assert not overlaps(target, relative("/w/corpus/proj-1.0/src/a.py", root), 21, 40)
    assert not overlaps(target, relative("/w/corpus/proj-1.0/tests/a.py", root), 1, 40)
    assert relative("src/a.py", root) == "src/a.py"
    assert (
        is_test_path("tests/unit/x.py")
        and is_test_path("pkg/test_x.py")
        and not is_test_path("src/testing_utils.py")
    )


def test_test_functions_and_test_files_are_never_targets(tmp_path: Path) -> None:
    src = tmp_path / "proj-1.0"
    (src / "pkg").mkdir(parents=True)
    (src / "tests").mkdir()
    (src / "pkg" / "core.py").write_text(
        'def parse(text):\n    """Parse a filter expression into its parts."""\n\n\n'
        'def test_inline(x):\n    """Check that inline parsing keeps every part."""\n'
    )
    helper = 'def build():\n    """Build a fixture with three parts in it."""\n'
    (src / "tests" / "helpers.py").write_text(helper)
    (src / "pkg" / "conftest.py").write_text(helper.replace("build", "setup"))
    targets, counts = build_corpus(src, tmp_path / "corpus", cap=10, seed=0)
    assert [t.name for t in targets] == ["parse"] and counts["candidates"] == 1
