"""Property: whatever a careless or hostile user gives them, the CLI and the Python API answer or
raise the project's own error types (hybrid_rag.errors), never anything else, and the store is
intact afterwards (SQLite integrity check, the same chunks)."""

from __future__ import annotations

import io
import os
import sqlite3
import string
import zipfile
from pathlib import Path

import pytest
import yaml
from engine_fixtures import engine_over, write_tree
from fake_settings import fake_settings
from hypothesis import given
from hypothesis import strategies as st

from hybrid_rag.cli import EXIT_BUG, main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import HybridRagError
from hybrid_rag.filters import FIELDS, parse_filter
from hybrid_rag.settings import load_settings

WORDS = ["soil", "clay", "compost", "circle", "area", "parse", "config", "drainage", "radius"]
FIELD_NAMES = [*FIELDS, "meta.type", "meta.date", "meta.tags", "meta.a.b", "nope", "META.X"]
OPS = ["=", "==", "!=", ">", ">=", "<", "<=", "~", " in ", " not in "]
GLOBS = st.lists(  # glob shapes: runs of stars, "/**/", "?", anchors, trailing "/" (issue 25.1)
    st.sampled_from(["*", "**", "***", "?", "/", "/**/", "**/", "a", "x", ".", "-", "[", "%", "_"]),
    min_size=1,
    max_size=24,
).map("".join)
VALUES = st.one_of(
    st.sampled_from(
        ["code", "text", "2024-01-01", "2024-13-45", "1e30", "-1", "0", "*.py", "src/**", "", "''"]
    ),
    st.sampled_from(["*" * 32 + "x", "*a" * 12 + "x", "**/" * 10 + "*.x", "?*" * 20 + "x"]),
    GLOBS,
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.text(alphabet=string.printable, max_size=12),
)


@st.composite
def filter_text(draw: st.DrawFn) -> str:
    """Mostly well-formed expressions, with random noise spliced in."""

    def term() -> str:
        op = draw(st.sampled_from(OPS))
        value = draw(VALUES)
        if "in" in op:
            value = "(" + ", ".join(draw(st.lists(VALUES, max_size=4))) + ")"
        return f"{draw(st.sampled_from(FIELD_NAMES))}{op}{value}"

    parts = [term() for _ in range(draw(st.integers(1, 5)))]
    joiners = [draw(st.sampled_from([" and ", " or ", " and not ", " or ("])) for _ in parts[1:]]
    text = parts[0] + "".join(j + p for j, p in zip(joiners, parts[1:], strict=True))
    noise = draw(st.text(alphabet="()'\"\\ notandor=<>~,\x00\n\u00e9\u202e", max_size=6))
    at = draw(st.integers(0, len(text)))
    return text[:at] + noise + text[at:] if draw(st.booleans()) else text


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Engine:
    files = {
        "a.md": "---\ntype: guide\ntags: [x, y]\n---\n# Soil\n\nClay soil and drainage.\n",
        "b.py": "def circle_area(radius):\n    return 3.14 * radius * radius\n",
    }
    with engine_over(write_tree(tmp_path_factory.mktemp("fuzz") / "docs", files)) as eng:
        yield eng


def intact(engine: Engine) -> None:
    db = sqlite3.connect(engine.settings.store_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM chunks").fetchone()[0] == 2
    finally:
        db.close()


@given(text=filter_text())
def test_random_filters(engine: Engine, text: str) -> None:
    try:
        engine.store.chunk_ids_matching(parse_filter(text))
        engine.query("soil", top_k=2, filters=text)
    except HybridRagError:
        pass
    intact(engine)


@given(
    query=st.one_of(
        st.text(max_size=200),
        st.text(alphabet=string.whitespace + "\x00\x07\u200b\u202e", max_size=20),
        st.builds(lambda w, n: " ".join([w] * n), st.sampled_from(WORDS), st.integers(1, 20_000)),
    ),
    top_k=st.integers(-3, 60),
    mode=st.sampled_from([None, "dense", "bm25", "hybrid", "DENSE", "sparse"]),
    features=st.dictionaries(
        st.sampled_from(["mmr", "rerank", "expansion", "nope", "self_check"]),
        st.sampled_from([True, False, "false", 1]),
    ),
)
def test_random_queries(engine: Engine, query: str, top_k: int, mode: str | None, features: dict) -> None:
    try:
        result = engine.query(query, top_k=top_k, mode=mode, features=features)
        assert len(result.chunks) <= max(top_k, 0)
        engine.context(query, top_k=min(max(top_k, 1), 5), features={"self_check": False})
    except HybridRagError:
        pass
    intact(engine)


YAML_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=True), st.text(max_size=8)
)
SECTIONS = [
    "paths",
    "retrieval",
    "chunking",
    "embedding",
    "bm25",
    "rerank",
    "mmr",
    "context",
    "features",
    "nope",
]
KEYS = [
    "top_k",
    "dense_top_k",
    "fusion",
    "mode",
    "max_tokens",
    "min_tokens",
    "overlap",
    "model",
    "k1",
    "b",
    "backend",
    "weight",
    "rerank",
    "mmr",
    "data_dir",
    "api_url",
    "x",
]


@given(
    config=st.one_of(
        st.dictionaries(
            st.sampled_from(SECTIONS),
            st.dictionaries(st.sampled_from(KEYS), YAML_SCALARS, max_size=3),
            max_size=3,
        ),
        YAML_SCALARS,
        st.lists(YAML_SCALARS, max_size=3),
    ),
    env=st.dictionaries(
        st.builds(
            lambda s, k: f"HYBRID_RAG_{s.upper()}__{k.upper()}",
            st.sampled_from(SECTIONS),
            st.sampled_from(KEYS),
        ),
        st.text(alphabet=string.printable, max_size=10),
        max_size=3,
    ),
)
def test_random_configs(tmp_path_factory, config: object, env: dict[str, str]) -> None:
    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    try:
        settings = load_settings(path, environ=env)
        assert settings.retrieval.top_k > 0
    except HybridRagError:
        pass


NAME = st.text(
    alphabet=string.ascii_letters + string.digits + "._- \u00e9\u4e2d\n\t", min_size=1, max_size=12
).filter(lambda n: n not in (".", "..") and "/" not in n)
CONTENT = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8")),
    st.text(max_size=100).map(lambda t: t.encode("utf-16")),
    st.text(max_size=100).map(lambda t: t.encode("latin-1", "replace")),
)


@given(
    tree=st.lists(st.tuples(st.lists(NAME, min_size=0, max_size=4), NAME, CONTENT), min_size=1, max_size=6),
    special=st.booleans(),
)
def test_random_file_trees(tmp_path_factory, tree, special: bool) -> None:
    root = tmp_path_factory.mktemp("tree")
    docs = root / "docs"
    docs.mkdir()
    for folders, name, content in tree:
        folder = docs.joinpath(*folders)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(content)
        except OSError:
            continue  # a name the file system refuses (a file where a folder should be)
    if special:
        os.mkfifo(docs / "a-fifo")
        (docs / "loop").symlink_to(docs)
    engine = Engine(fake_settings(root / "data"))
    try:
        engine.ingest([docs])
        engine.query("soil")
    except HybridRagError:
        pass
    finally:
        engine.close()
    if (root / "data" / "store.sqlite3").exists():
        db = sqlite3.connect(root / "data" / "store.sqlite3")
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.close()


MEMBER = st.text(alphabet=string.ascii_letters + "./\\:_-\u00e9", min_size=1, max_size=20)


@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")
@given(members=st.lists(st.tuples(MEMBER, CONTENT), min_size=1, max_size=5), corrupt=st.booleans())
def test_random_zip_members(tmp_path_factory, members, corrupt: bool) -> None:
    root = tmp_path_factory.mktemp("zip")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members:
            archive.writestr(name, content)
    data = buffer.getvalue()
    if corrupt:
        data = data[: len(data) // 2]
    path = root / "docs.zip"
    path.write_bytes(data)
    engine = Engine(fake_settings(root / "data"))
    try:
        engine.ingest([path])
    except HybridRagError:
        pass
    finally:
        engine.close()


@given(
    argv=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "query",
                    "context",
                    "stats",
                    "versions",
                    "rollback",
                    "--top-k",
                    "--filter",
                    "--mode",
                    "--json",
                    "--mmr",
                    "-1",
                    "0",
                    "99999999999999999999",
                    "size>1",
                    "((",
                    "soil",
                ]
            ),
            st.text(max_size=10),
        ),
        max_size=6,
    )
)
def test_random_cli_arguments(engine: Engine, argv: list[str], capsys) -> None:
    try:
        code = main(["--data-dir", str(engine.settings.data_dir), *argv])
    except SystemExit as exit_:  # argparse: usage error, exit 2
        code = exit_.code
    assert code != EXIT_BUG, capsys.readouterr().err
    intact(engine)


def test_one_subprocess_smoke(tmp_path: Path) -> None:
    """The installed command: a hostile filter and a file as data dir end in one line, exit 2."""
    import subprocess
    import sys

    bad = tmp_path / "file"
    bad.write_text("x")
    for argv in (
        ["--data-dir", str(bad), "stats"],
        ["--data-dir", str(tmp_path / "d"), "query", "x", "--filter", "(" * 3000],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "hybrid_rag.cli", *argv], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
