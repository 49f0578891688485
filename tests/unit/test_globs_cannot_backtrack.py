"""A glob is matched without backtracking: a 20-character filter of sixteen ``**`` (which held the
server for minutes as a regular expression) or ``*a*a*a...`` answers at once, in SQL and in Python,
and means what the regular expression of the same glob means."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import column
from sqlalchemy.dialects import postgresql, sqlite

from hybrid_rag.errors import InputError
from hybrid_rag.filters import glob_match, glob_to_regex, normalize_glob
from hybrid_rag.filters.globs import compile_glob
from hybrid_rag.store.filter_sql import GlobMatch

HOSTILE = [
    "*" * 32 + "x",
    "**" * 16 + "x",
    "*a" * 12 + "x",
    "**/" * 10 + "*.x",
    "?*" * 20 + "x",
    "a/**" * 12 + "/z",
]


@pytest.mark.parametrize("pattern", HOSTILE)
def test_a_glob_compiles_to_at_most_one_node_a_character(pattern: str) -> None:
    glob = compile_glob(pattern)
    assert len(glob.nodes) <= 2 * len(pattern)
    assert "***" not in normalize_glob(pattern)


@pytest.mark.parametrize("pattern", HOSTILE)
def test_the_regex_of_a_glob_has_no_adjacent_unbounded_quantifiers(pattern: str) -> None:
    """What PostgreSQL gets: runs of stars collapse, so no ``.*.*`` (the backtracking shape)."""
    regex = glob_to_regex(pattern)
    assert not re.search(r"(\.\*|\[\^/\]\*)(\.\*|\[\^/\]\*)", regex)


def test_runs_of_stars_mean_two_stars() -> None:
    assert normalize_glob("src/****.py") == "src/**.py"
    assert glob_match("***.py", "/a/b/c.py") and glob_match("**.py", "/a/b/c.py")
    assert glob_match("/a/***", "/a/b/c") and not glob_match("/a/*", "/a/b/c")
    with pytest.raises(InputError, match="empty glob"):
        normalize_glob("")


def test_hostile_globs_answer_at_once_on_a_store_of_thousands_of_paths(tmp_path) -> None:
    """In a subprocess with a generous timeout: a hang guard, not a speed target (the regular
    expression of ``**`` x 16 ran for more than 90 s on 600 paths)."""
    code = textwrap.dedent(
        f"""
        from hybrid_rag.filters import parse_filter
        from hybrid_rag.store import MetadataStore
        from filter_store import write_documents
        store = MetadataStore({str(tmp_path / "s.sqlite3")!r})
        docs = [(f"/r/{{'d' * 40}}/{{i:05d}}/{{'a' * 60}}.md", "c", "text", "markdown", 1,
                 "2026-01-01T00:00:00", "2026-01-01T00:00:00", [(1, 1, 1)]) for i in range(3000)]
        write_documents(store, docs)
        for glob in {HOSTILE!r}:
            ids = store.chunk_ids_matching(parse_filter(f"path ~ '{{glob}}'"))
            assert len(ids) == 0, glob
        print("ok")
        """
    )
    tests = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tests, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_sqlite_runs_the_matcher_and_postgresql_the_regex() -> None:
    condition = GlobMatch(column("path"), "src/**")
    lite = str(condition.compile(dialect=sqlite.dialect()))
    assert lite.startswith("hybrid_rag_glob(") and "REGEXP" not in lite.upper()
    pg = condition.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    assert "path ~ '(?:^|/)src/.*\\Z'" in str(pg)


PIECES = st.sampled_from(["a", "b", "/", ".", "*", "**", "?", "/**/", "**/"])
PATHS = st.text(alphabet="ab/.", max_size=12)


def _regex_of(pattern: str) -> str:
    """The translation before the matcher: one regex piece a token, no collapsing."""
    prefix = "^" if pattern.startswith("/") else "(?:^|/)"
    pattern += "**" if pattern.endswith("/") else ""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("/**/", i):
            out.append("/(?:.*/)?")
            i += 4
        elif i == 0 and pattern.startswith("**/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])))
            i += 1
    return prefix + "".join(out) + r"\Z"


@settings(max_examples=400)
@given(pieces=st.lists(PIECES, min_size=1, max_size=6), path=PATHS)
def test_the_matcher_means_what_the_regular_expression_means(pieces: list[str], path: str) -> None:
    pattern = normalize_glob("".join(pieces))
    assert glob_match(pattern, path) is (re.search(_regex_of(pattern), path) is not None)
    assert glob_match(pattern, path) is (re.search(glob_to_regex(pattern), path) is not None)
