"""Filters pushed down to Milvus match exactly the chunks the SQLite store matches.

The glob -> ``like`` translation is checked without Milvus against ``glob_match`` on random paths;
then, on milvus-lite, hundreds of random filters (every field, operator, globs, dates, fractions,
and/or/not) match the same chunk ids in both Milvus collections as ``chunk_ids_matching`` does.
"""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from filter_store import write_documents

from hybrid_rag.filters import And, Compare, FilterExpr, InList, Not, Or, glob_match, parse_filter
from hybrid_rag.indices.milvus.filters import glob_like_patterns, to_milvus
from hybrid_rag.protocols import FilteredIds, with_filter
from hybrid_rag.store import MetadataStore

GLOBS = [
    "*.py", "src/**", "src/", "src/**/*.py", "**/guide.md", "**", "*", "/proj/**", "/proj/**.md",
    "app/main.py", "a_b/**", "*_x.py", "100%/**", "*.md", "docs/**/*.md", "weird dir/**", "/src/**",
    "src/*.py", "m?in.*", "*foo*", "/proj/*.md", "**/app/**", "*q'\"uote.txt", "a\\b/**", "x_*",
    "****************x", "***.md", "src/****", "/proj/***/*.md", "app/**/**/**/main.py",
]  # fmt: skip
NO_LIKE = {"src/*.py", "m?in.*", "*foo*", "/proj/*.md", "x_*"}  # no exact like form: None


def _like(pattern: str, text: str) -> bool:
    """SQL LIKE with backslash escapes, as Milvus evaluates it."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append({"%": ".*", "_": "."}.get(pattern[i], re.escape(pattern[i])))
        i += 1
    return re.fullmatch("".join(out), text, flags=re.S) is not None


def test_like_patterns_match_exactly_what_the_glob_matches() -> None:
    rng = np.random.default_rng(0)
    alphabet = [*"ab/._%x", "src", "app", "main.py", "md", "a_b", "100%", "docs", "proj", "\\"]
    paths = {"".join(rng.choice(alphabet, size=int(rng.integers(1, 9)))) for _ in range(3000)}
    paths |= {"/proj/src/app/main.py", "/proj/a_b/c.py", "/proj/100%/x", "/home/src", "/weird dir/x"}
    compiled = 0
    for glob in GLOBS:
        patterns = glob_like_patterns(glob)
        if glob in NO_LIKE:
            assert patterns is None, glob
            continue
        assert patterns is not None, glob
        compiled += 1
        for path in paths:
            assert any(_like(p, path) for p in patterns) == glob_match(glob, path), (glob, path, patterns)
    assert compiled == len(GLOBS) - len(NO_LIKE)


def test_filtered_ids_keep_the_filter_only_on_the_array_it_was_given() -> None:
    expr = parse_filter("size > 1")
    marked = with_filter(np.array([3, 1, 2]), expr)
    assert isinstance(marked, FilteredIds) and marked.filter_expr is expr
    assert getattr(marked[:2], "filter_expr", None) is None
    assert not isinstance(np.asarray(marked, dtype=np.int64), FilteredIds)
    assert type(with_filter(np.array([1]), None)) is np.ndarray


def test_fractions_and_days_compile_as_the_sql_means_them() -> None:
    assert to_milvus(parse_filter("size > 10.5")) == "size >= 11"
    assert to_milvus(parse_filter("start_line <= 2.5")) == "start_line <= 2"
    assert to_milvus(parse_filter("token_count = 2.5")) == "chunk_id < 0"
    assert to_milvus(parse_filter("ingested_at = 2026-01-01")) == (
        "(ingested_at >= 1767225600000000 and ingested_at < 1767312000000000)"
    )
    assert to_milvus(parse_filter("path ~ 'src/*.py' or size > 1")) is None


# ------------------------------------------------------------------------------ against Milvus

# path, collection, source_type, language, size, mtime, ingested_at, [(start, end, tokens)]
DOCS = [
    ("/proj/src/app/main.py", "src", "code", "python", 100, "2025-06-01T00:00", "2025-12-31T23:00",
     [(1, 10, 50), (11, 30, 120)]),
    ("/proj/src/util.py", "src", "code", "python", 2000, "2025-12-31T12:00", "2026-01-01T12:00",
     [(1, 5, 20)]),
    ("/proj/docs/guide.md", "docs", "text", "markdown", 300, "2026-01-01T00:00", "2026-01-02T00:00",
     [(1, 40, 300)]),
    ("/proj/a_b/x_y.py", "a_b", "code", "python", 55, "2026-02-01T08:30", "2026-01-01T00:00", [(3, 7, 35)]),
    ("/proj/100%/notes.md", "100%", "text", "markdown", 1000, "2024-01-01T00:00", "2026-01-02T00:00",
     [(1, 2, 10), (3, 9, 60)]),
    ("/weird dir/q'\"uote.txt", "docs", "text", "text", 7, "2026-01-01T23:59", "2026-01-02T00:00:00.5",
     [(1, 1, 3)]),
    ("/proj/a\\b/c.js", "other", "code", "javascript", 10, "2026-03-01T00:00", "2026-03-01T00:00",
     [(2, 4, 12)]),
]  # fmt: skip
VALUES = {
    "path": [d[0] for d in DOCS] + ["/nope"],
    "collection": ["src", "docs", "a_b", "100%", "other", "x"],
    "language": ["python", "markdown", "text", "javascript", "Python"],
    "source_type": ["code", "text", "CODE"],
    "size": ["7", "55", "100", "300", "54.5", "1000", "2000", "0"],
    "start_line": ["1", "2", "3", "2.5", "11"],
    "end_line": ["1", "5", "9", "10", "29.9", "40"],
    "token_count": ["3", "35", "60", "120", "59.5"],
    "ingested_at": ["2026-01-01", "2026-01-02", "2025-12-31T23:00", "2026-01-02T00:00:00.5",
                    "2026-01-01T12:00Z"],
    "mtime": ["2026-01-01", "2025-12-31T12:00", "1767225600", "2026-02-01T08:30+01:00", "2024-01-01"],
}  # fmt: skip
OPS = {
    "path": ["=", "!=", "~", "in"], "collection": ["=", "!=", "~", "in"], "language": ["=", "!=", "in"],
    "source_type": ["=", "!=", "in"], "size": ["=", "!=", ">", ">=", "<", "<=", "in"],
    "start_line": ["=", ">", "<=", "in"], "end_line": ["!=", ">=", "<", "in"],
    "token_count": ["=", ">", "in"],
    "ingested_at": ["=", "!=", ">", ">=", "<", "<="], "mtime": ["=", "!=", ">", ">=", "<", "<="],
}  # fmt: skip


# each document's metadata and its chunks' own (a chunk's key wins over its document's at any depth)
META = {
    "/proj/src/app/main.py": (
        {"team": "search", "n": 5, "tags": ["draft", "x", 3], "flag": True, "nested": {"a": 1}},
        [{"nested": {"b": 7}}, {"team": "ranking", "n": None}],
    ),
    "/proj/src/util.py": (
        {"team": "infra", "n": 5.5, "tags": "draft", "date": "2024-06-01", "none": None},
        [],
    ),
    "/proj/docs/guide.md": (
        {"team": "Search", "n": "5", "tags": [], "flag": False, "nested": {"a": "1"}},
        [],
    ),
    "/proj/a_b/x_y.py": ({"n": -1, "tags": ["y", True, None]}, []),
    "/proj/100%/notes.md": ({}, [{"tags": ["draft"]}]),
    "/weird dir/q'\"uote.txt": ({"team": "q'\"u", "n": 1000.0, "date": "2025-01-01T10:00"}, []),
    "/proj/a\\b/c.js": ({"nested": None, "flag": 1}, []),
}
VALUES.update(
    {
        "meta.team": ["search", "Search", "infra", "ranking", "q'\"u", "nope", "m"],
        "meta.n": ["5", "5.5", "-1", "1000", "0", "abc", "4.9"],
        "meta.tags": ["draft", "x", "3", "y", "1", "true"],
        "meta.flag": ["true", "1", "0", "false"],
        "meta.nested.a": ["1", "2", "0.5"],
        "meta.nested.b": ["7", "2"],
        "meta.date": ["2024-06-01", "2025-01-01"],
        "meta.none": ["x", "1"],
        "meta.missing": ["x", "1"],
    }
)
OPS.update({k: ["=", "!=", ">", "<=", "<", ">=", "in", "~"] for k in VALUES if k.startswith("meta.")})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> MetadataStore:
    s = MetadataStore(tmp_path_factory.mktemp("milvus-filters") / "store.sqlite3")
    write_documents(s, DOCS, META)
    yield s
    s.close()


def _random_filter(rng: np.random.Generator, depth: int = 0) -> FilterExpr:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        items = tuple(_random_filter(rng, depth + 1) for _ in range(int(rng.integers(2, 4))))
        return And(items) if rng.random() < 0.5 else Or(items)
    if depth < 3 and roll < 0.4:
        return Not(_random_filter(rng, depth + 1))
    field = str(rng.choice(list(OPS)))
    op = str(rng.choice(OPS[field]))
    if op == "in":
        values = tuple(str(v) for v in rng.choice(VALUES[field], size=int(rng.integers(0, 4))))
        return InList(field, values, negated=bool(rng.random() < 0.3))
    if op == "~":
        return Compare(
            field, op, str(rng.choice(GLOBS if field == "path" else ["d*", "*c*", "a_*", "1*%", "s*"]))
        )
    return Compare(field, op, str(rng.choice(VALUES[field])))


def test_random_filters_match_the_same_chunks_in_milvus_as_in_the_store(
    store: MetadataStore, tmp_path_factory
) -> None:
    pytest.importorskip("pymilvus", reason="the [milvus] extra (pymilvus, milvus-lite) is not installed")
    from hybrid_rag.indices.milvus.bm25 import MilvusKeywordIndex
    from hybrid_rag.indices.milvus.client import chunk_fields, connect, forget_clients
    from hybrid_rag.indices.milvus.dense import MilvusVectorIndex
    from hybrid_rag.settings import BM25Settings, MilvusSettings

    settings = MilvusSettings(index_type="FLAT")
    client = connect(settings, tmp_path_factory.mktemp("milvus"))
    chunks = list(store.iter_chunks())
    ids, fields = np.array([c.id for c in chunks]), chunk_fields(store, chunks)
    keyword = MilvusKeywordIndex.create(
        client, "f_" + uuid.uuid4().hex[:8], settings, BM25Settings(tokenizer="regex")
    )
    keyword.add(ids, [c.text for c in chunks], fields=fields)
    dense = MilvusVectorIndex.create(
        client, "f_" + uuid.uuid4().hex[:8], settings, dimension=4, model_name="m", scoring="maxp"
    )
    dense.add(ids, [np.eye(4, dtype=np.float32)[: 1 + i % 3] for i in range(len(ids))], fields=fields)
    rng = np.random.default_rng(42)
    compared, nonempty, metas = 0, 0, 0
    try:
        for _ in range(500):
            expr = _random_filter(rng)
            compiled = to_milvus(expr)
            if compiled is None:
                continue
            metas += "meta[" in compiled
            want = store.chunk_ids_matching(expr).tolist()
            for collection in (keyword.name, dense.name):
                rows = client.query(collection, filter=compiled, output_fields=["chunk_id"], limit=1000)
                assert sorted({r["chunk_id"] for r in rows}) == want, (str(expr), compiled)
            compared += 1
            nonempty += bool(want) and len(want) < len(ids)
    finally:
        forget_clients()
    assert compared >= 250 and nonempty >= 80 and metas >= 100


def test_searches_send_the_compiled_filter_for_many_ids_and_the_ids_otherwise(
    store: MetadataStore, tmp_path_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pymilvus", reason="the [milvus] extra (pymilvus, milvus-lite) is not installed")
    from hybrid_rag.indices.milvus import collection as milvus_collection
    from hybrid_rag.indices.milvus.client import chunk_fields, connect, forget_clients
    from hybrid_rag.indices.milvus.dense import MilvusVectorIndex
    from hybrid_rag.settings import MilvusSettings

    settings = MilvusSettings(index_type="FLAT")
    client = connect(settings, tmp_path_factory.mktemp("milvus"))
    chunks = list(store.iter_chunks())
    ids = np.array([c.id for c in chunks])
    dense = MilvusVectorIndex.create(
        client, "p_" + uuid.uuid4().hex[:8], settings, dimension=3, model_name="m", scoring="maxp"
    )
    rng = np.random.default_rng(1)
    dense.add(
        ids, [rng.standard_normal((2, 3)).astype(np.float32) for _ in ids], fields=chunk_fields(store, chunks)
    )
    sent: list[str] = []
    search = client.search
    monkeypatch.setattr(client, "search", lambda *a, **kw: sent.append(kw["filter"]) or search(*a, **kw))
    try:
        for text, pushed in [
            ("source_type = code and path ~ 'src/**'", "like"),
            ("meta.team in (search, infra) or meta.n > 5", "meta["),
            ("path ~ 'src/*.py'", None),
            ("meta.date > 2024-01-01", None),  # a date in a meta key: no Milvus form, the ids go
        ]:
            expr = parse_filter(text)
            allowed = store.chunk_ids_matching(expr)
            by_ids = dense.search(np.ones(3, dtype=np.float32), 10, allowed)
            monkeypatch.setattr(milvus_collection, "ID_LIST_MAX", 0)
            sent.clear()
            by_filter = dense.search(np.ones(3, dtype=np.float32), 10, with_filter(allowed, expr))
            monkeypatch.setattr(milvus_collection, "ID_LIST_MAX", 4096)
            assert by_filter == by_ids and {h.id for h in by_ids} == set(allowed.tolist())
            if pushed:
                assert sent and all(pushed in f and "chunk_id in" not in f for f in sent), text
            else:
                assert sent and all(f.startswith("chunk_id in") for f in sent), text
    finally:
        forget_clients()


def test_without_the_extra_the_milvus_backend_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hybrid_rag.errors import ConfigError
    from hybrid_rag.indices.milvus.client import connect
    from hybrid_rag.settings import MilvusSettings

    monkeypatch.setitem(sys.modules, "pymilvus", None)  # as if not installed: importing it fails
    with pytest.raises(ConfigError, match=r"pip install 'hybrid-rag\[milvus\]'"):
        connect(MilvusSettings(uri="absent.db"), tmp_path)
