"""A legal filter of thousands of `meta.` comparisons cost 47 s of CPU (building and compiling its
SQL, in Python, before the database saw it), ran on after the request's 504, and its megabytes of
SQL stayed in SQLAlchemy's statement cache. Now a `meta.` comparison costs what its SQL costs in
`retrieval.filter_max_terms`, the SQL is built and compiled under the request's deadline, a long
filter's statement is not cached, and on PostgreSQL the statement gets the time left."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest
from engine_fixtures import engine_over, write_tree
from fake_settings import fake_settings
from pg_server import fresh_database
from sqlalchemy import text

from hybrid_rag import deadline
from hybrid_rag.deadline import DeadlineExceeded
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.store import MetadataStore


def _meta_chain(n: int) -> str:
    """``n`` comparisons on ``n`` keys, the documents holding one of them (k1 = x)."""
    return " or ".join(["meta.k1 = x", *(f"meta.k{i} > {i}" for i in range(2, n + 1))])


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    docs = write_tree(
        tmp_path_factory.mktemp("meta") / "docs",
        {f"n{i}.md": f"# note {i}\n\nsoil clay number {i}\n" for i in range(5)},
    )
    with engine_over(docs, ingest={"metadata": {"k1": "x"}}, retrieval__filter_max_terms=10**9) as eng:
        yield eng


def test_the_probes_filter_is_refused_by_its_cost_at_once(tmp_path: Path) -> None:
    eng = Engine(fake_settings(tmp_path / "d"))
    (tmp_path / "a.md").write_text("# Soil\n\nClay soil holds water.\n")
    eng.ingest([tmp_path / "a.md"], metadata={"k1": "x"})
    try:
        start = time.monotonic()
        probe = " and ".join(f"meta.k{i} != v{i}" for i in range(4999))  # 74 KB, within every limit before
        with pytest.raises(InputError, match=r"over retrieval.filter_max_terms \(5000\)") as err:
            eng.query("soil", filters=probe)
        assert "a `meta.` comparison counts" in str(err.value)
        assert time.monotonic() - start < 5  # refused before any SQL (it ran ~47 s)
        assert eng.query("soil", filters=_meta_chain(200)).chunks  # a long legal one still answers
    finally:
        eng.close()


def test_building_and_compiling_a_long_filter_stops_at_the_deadline(engine: Engine) -> None:
    # the collector off while timing: in the whole suite (a 1.3 GB heap) one full collection inside
    # the deadline's call took longer than the work it was compared with
    gc.collect()
    gc.disable()
    try:
        start = time.monotonic()
        assert engine.query("soil", filters=_meta_chain(1500), mode="bm25").chunks  # the whole work
        whole = time.monotonic() - start
        assert whole > 0.6, whole  # long enough to stop in the middle
        start = time.monotonic()
        with pytest.raises(DeadlineExceeded):  # another filter: nothing of the first one's SQL reused
            deadline.run_within(0.1, engine.query, "soil", filters=_meta_chain(1501), mode="bm25")
        stopped = time.monotonic() - start
    finally:
        gc.enable()
    assert stopped < whole / 2, (stopped, whole)  # it ran to its end before, 504 or not


def test_a_long_filters_statement_is_not_kept_in_the_cache(engine: Engine) -> None:
    engine.query("soil", filters="meta.k1 = x")  # a short filter is cached as before
    cache = engine.store._open().kw["bind"]._compiled_cache
    before = len(cache)
    for n in (300, 301, 302):  # three distinct long filters: each would be a cache entry of its own
        engine.query("soil", filters=_meta_chain(n), mode="bm25")
    assert len(cache) == before


def test_a_postgresql_statement_gets_the_time_left() -> None:
    with fresh_database() as url:
        store = MetadataStore(Path("unused"), url=url)
        try:
            from hybrid_rag.store.statement_timeout import bound_to_deadline

            def sleep() -> None:
                with store._session() as s:
                    bound_to_deadline(s)
                    s.execute(text("SELECT pg_sleep(5)"))

            start = time.monotonic()
            with pytest.raises(DeadlineExceeded):
                deadline.run_within(0.3, sleep)
            assert time.monotonic() - start < 3
        finally:
            store.close()
