"""What a BM25-first ingest embeds first (``ingest/embed_order.py``): the implementation before
tests, vendored files last; ``ingest.embed_never``'s roles never, and every answer says which
roles and folders are BM25-only (the trace's dense note: query --json, HTTP and MCP carry it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from fake_settings import fake_settings

from hybrid_rag.code.roles import EMBED_ORDER, EMBED_ROLES
from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError
from hybrid_rag.indices.coverage import dense_status
from hybrid_rag.ingest.embed_order import embed_plan
from hybrid_rag.models.embedders import FAKE_WINDOW_WORDS, FakeEmbedder
from hybrid_rag.settings import Settings
from hybrid_rag.settings_ingest import EmbedRole

OVERRIDES = {
    "ingest.batch_chunks": 2,
    "ingest.bm25_first_min_bytes": 0,
    "ingest.publish_every_seconds": 0.0001,  # a partial version after every batch
}
# the walk's (sorted) order puts the example, the vendored file and the tests before the source
FILES = {
    "examples/demo.py": "def markexampledemo():\n    return 'how to call the core'\n",
    "lib/vendor/lib.py": "def markvendorlib():\n    return 'bundled third party helper'\n",
    "spec/test_core.py": "def test_core():\n    assert marktestcore() == 1\n",
    "spec/test_util.py": "def test_util():\n    assert marktestutil() == 2\n",
    "src/app/core.py": "def marksrccore():\n    return 'the core computes the retry delay'\n",
    "src/app/util.py": "def marksrcutil():\n    return 'the util parses flags'\n",
    "src/app/io.py": "def marksrcio():\n    return 'the io module reads files'\n",
}


def _settings(data: Path, **more: object) -> Settings:
    return fake_settings(data, {**OVERRIDES, **more})


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


class Recording(FakeEmbedder):
    """Records the marker word of each text it embeds, in order, and runs ``probe`` before each
    batch (a query from another engine on the same data dir)."""

    def __init__(self, probe=None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kwargs)
        self.probe = probe
        self.order: list[str] = []

    def embed_passage_windows(self, texts):  # type: ignore[no-untyped-def]
        if self.probe is not None:
            self.probe()
        for text in texts:
            self.order.extend(re.findall(r"\bmark\w+", text)[:1])
        return super().embed_passage_windows(texts)


def _embedder(probe=None) -> Recording:  # type: ignore[no-untyped-def]
    return Recording(probe, dimension=256, window_words=FAKE_WINDOW_WORDS)


def test_the_fill_embeds_the_source_before_the_tests_and_vendored_files_last(
    tmp_path: Path, tree: Path
) -> None:
    data = tmp_path / "data"
    notes: list[list[str]] = []

    def probe() -> None:
        reader = Engine(_settings(data))
        try:
            notes.append(
                [n for n in reader.query("marksrccore", top_k=3).trace.notes if n.startswith("dense")]
            )
        finally:
            reader.close()

    embedder = _embedder(probe)
    engine = Engine(_settings(data), embedder=embedder)
    try:
        report = engine.ingest([tree], bm25_first=True)
        assert report.partial_versions >= 2
        order = embedder.order
        assert order == [
            "marksrccore",
            "marksrcio",
            "marksrcutil",
            "marktestcore",
            "marktestutil",
            "markexampledemo",
            "markvendorlib",
        ], order
        # the answers while it filled in said which roles and folders were BM25-only
        first = notes[0][0]
        assert "building, 0%" in first and "not dense yet:" in first
        assert "source 3" in first and "test 2" in first and "vendored 1" in first and "spec/ 2" in first
        # once the source is in (batches of 2: with the first test), a test, the example and the
        # vendored file are left
        later = [n[0] for n in notes if "source" not in n[0].split("not dense yet:")[1]]
        left = "example 1, test 1, vendored 1 chunks (in examples/ 1, lib/ 1, spec/ 1)"
        assert later and left in later[0], later
        final = engine.query("marksrccore", top_k=3)
        assert not [n for n in final.trace.notes if n.startswith("dense")]  # complete: nothing to say
    finally:
        engine.close()


def test_a_never_role_stays_bm25_only_and_every_answer_says_so(tmp_path: Path, tree: Path) -> None:
    for name, bm25_first in (("first", True), ("streamed", False)):
        data = tmp_path / name
        embedder = _embedder()
        engine = Engine(_settings(data, **{"ingest.embed_never": ["vendored"]}), embedder=embedder)
        try:
            engine.ingest([tree], bm25_first=bm25_first)
            if bm25_first:
                assert "markvendorlib" not in embedder.order  # the fill never embedded it
            live = engine.indices.get()
            vendor = [c.id for c in engine.store.iter_chunks() if "markvendorlib" in c.text]
            assert vendor and not live.dense.contains(vendor).any(), name
            assert len(live.dense) == len(live.bm25) - len(vendor)
            assert dense_status(live.manifest) == ""  # complete: nothing more is coming
            result = engine.query("markvendorlib", top_k=3)
            payload = result.to_dict()
            assert result.chunks and "markvendorlib" in result.chunks[0].chunk.text  # BM25 finds it
            assert "dense" not in payload
            assert any(
                "never embedded (ingest.embed_never): vendored 1" in n for n in payload["trace"]["notes"]
            ), payload["trace"]["notes"]
            # a re-run, and a rebuild, keep it out and publish nothing partial
            again = engine.ingest([tree], bm25_first=bm25_first)
            assert again.partial_versions == 0
            engine.rebuild()
            assert not engine.indices.get().dense.contains(vendor).any()
        finally:
            engine.close()


def test_the_order_puts_listed_roles_first_and_the_rest_after() -> None:
    todo = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    paths = {
        1: "/r/vendor/x.py",
        2: "/r/tests/test_a.py",
        3: "/r/src/a.py",
        4: "/r/README.md",
        5: "/r/x.min.js",
    }
    plan, never = embed_plan(todo, paths, "/r", ("source", "test"), never=("minified",))
    assert [sha for sha, _ in plan] == ["c", "b", "d", "a"]  # source, test, then prose and vendored
    assert never == {"minified": 1}
    # a root folder named like a role does not make every file that role (paths read relative)
    plan, _ = embed_plan(
        {"a": 1, "b": 2}, {1: "/w/tests/repo/t/x.py", 2: "/w/tests/repo/a.py"}, "/w/tests/repo", ("source",)
    )
    assert [sha for sha, _ in plan] == ["a", "b"]


def test_translation_catalogues_come_after_the_tests() -> None:
    todo = {"po": 1, "test": 2, "src": 3, "vendor": 4}
    paths = {
        1: "/r/pkg/conf/locale/de/LC_MESSAGES/django.po",
        2: "/r/tests/test_a.py",
        3: "/r/pkg/core.py",
        4: "/r/pkg/static/vendor/jquery.js",
    }
    plan, _ = embed_plan(todo, paths, "/r", EMBED_ORDER)
    assert [sha for sha, _ in plan] == ["src", "test", "po", "vendor"]


def test_the_settings_name_the_roles_and_refuse_others(tmp_path: Path) -> None:
    assert set(get_args(EmbedRole)) == set(EMBED_ROLES) == set(EMBED_ORDER)
    assert Settings().ingest.embed_order == EMBED_ORDER and Settings().ingest.embed_never == ()
    with pytest.raises(ConfigError, match="embed_never"):
        _settings(tmp_path, **{"ingest.embed_never": ["vendor"]})


def test_a_role_added_to_never_leaves_the_dense_index_and_one_removed_is_embedded(
    tmp_path: Path, tree: Path
) -> None:
    data = tmp_path / "data"
    engine = Engine(_settings(data))
    try:
        engine.ingest([tree])
        vendor = [c.id for c in engine.store.iter_chunks() if "markvendorlib" in c.text]
        assert engine.indices.get().dense.contains(vendor).all()
    finally:
        engine.close()
    engine = Engine(_settings(data, **{"ingest.embed_never": ["vendored"]}))
    try:  # the next write's build (an update of the live version, not a full one) takes it out
        (tree / "src/app/io.py").write_text("def marksrcio():\n    return 'the io module writes files'\n")
        engine.ingest([tree])
        live = engine.indices.get()
        assert not live.dense.contains(vendor).any() and dense_status(live.manifest) == ""
        assert "vendored 1" in engine.query("markvendorlib").trace.not_dense
    finally:
        engine.close()
    engine = Engine(_settings(data))
    try:  # removed from the list: the next build embeds it
        engine.rebuild()
        live = engine.indices.get()
        assert live.dense.contains(vendor).all() and not engine.query("markvendorlib").trace.not_dense
    finally:
        engine.close()
