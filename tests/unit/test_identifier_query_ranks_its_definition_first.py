"""A question naming an identifier of the corpus ranks the chunk that defines it first when
``features.symbols`` is on (the symbol list in fusion), even where other files repeat the name
more often; with the flag off (config or per call) the ranking is the old one, and the trace
times the stage."""

from __future__ import annotations

import textwrap

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.engine import Engine

POOL = textwrap.dedent(
    '''\
    class ConnectionPool:
        """Keeps sockets open between requests."""

        def __init__(self, size: int) -> None:
            self.size = size
    '''
)
USES = "\n".join(
    f"def test_pool_{i}():\n    pool = ConnectionPool({i})  # ConnectionPool, ConnectionPool\n"
    for i in range(4)
)
GUIDE = "# ConnectionPool\n\nConnectionPool, ConnectionPool: make a ConnectionPool once, share it.\n"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    topics = enumerate(("retry", "timeout", "codec", "router", "cache", "metrics"))
    files = {f"src/{t}.py": f"def {t}_{i}(value):\n    return value  # {t}\n" for i, t in topics}
    files |= {"src/pool.py": POOL, "tests/test_pool.py": USES, "docs/guide.md": GUIDE}
    root = write_tree(tmp_path_factory.mktemp("repo"), files)
    with engine_over(root / "src", root / "tests", root / "docs", retrieval__path_priors=[]) as eng:
        yield eng


def _top(engine: Engine, query: str, **kwargs: object) -> str:
    result = engine.query(query, top_k=3, **kwargs)
    return f"{result.chunks[0].path}:{result.chunks[0].start_line}"


def test_the_definition_ranks_first_with_the_symbol_list(engine: Engine) -> None:
    for query in ("ConnectionPool", "where is ConnectionPool defined?", "ConnectionPool.__init__"):
        assert _top(engine, query) == "src/pool.py:1", query


CODE_RULES = ("definition_first", "path_match", "path_roles", "file_coherence")
CODE_RULES_OFF = dict.fromkeys(CODE_RULES, False)


def test_without_the_symbol_list_the_repeated_name_ranks_first(engine: Engine) -> None:
    off = engine.query("ConnectionPool", top_k=3, features={"symbols": False, **CODE_RULES_OFF})
    assert not off.chunks[0].path.startswith("src/")
    assert "symbols" not in {t.stage for t in off.trace.timings}
    on = engine.query("ConnectionPool", top_k=3)
    assert "symbols" in {t.stage for t in on.trace.timings}
    assert on.chunks[0].breakdown["symbols"] == 1.0
    assert {c.id for c in on.chunks} == {c.id for c in off.chunks}  # the same chunks, another order


def test_a_query_that_names_no_definition_keeps_the_old_order(engine: Engine) -> None:
    query = "make one and share it between requests"
    on = engine.query(query, top_k=3)
    off = engine.query(query, top_k=3, features={"symbols": False})
    assert [c.id for c in on.chunks] == [c.id for c in off.chunks]
    assert [c.score for c in on.chunks] == [c.score for c in off.chunks]


def test_the_flag_in_the_config_turns_the_list_off(engine: Engine) -> None:
    settings = engine.settings.with_overrides(
        {"features.symbols": False, **{f"features.{k}": v for k, v in CODE_RULES_OFF.items()}}
    )
    other = Engine(settings, embedder=engine.embedder)
    try:
        assert not other.query("ConnectionPool", top_k=3).chunks[0].path.startswith("src/")
    finally:
        other.close()
