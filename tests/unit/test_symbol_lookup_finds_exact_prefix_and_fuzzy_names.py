"""``Engine.symbols`` finds definitions by exact name, qualified name, prefix and close spelling,
best first, filtered by kind and path; ``Engine.outline`` lists a file's definitions in order,
nested; both cite ``path:start-end`` with paths as results show them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from engine_fixtures import engine_over, write_tree
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.symbols.search import outline_tree

POOL = textwrap.dedent(
    '''\
    class ConnectionPool:
        """A pool of open connections."""

        def get(self) -> int:
            return 1

        class Slot:
            def release(self) -> None:
                pass


    def connect(url: str) -> ConnectionPool:
        """Open a pool for ``url``."""
        return ConnectionPool()
    '''
)
CLIENT = textwrap.dedent(
    """\
    def get(key):
        return key


    def connection_count():
        return 0
    """
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root = write_tree(tmp_path_factory.mktemp("repo"), {"src/pool.py": POOL, "tests/test_client.py": CLIENT})
    with engine_over(root / "src", root / "tests") as eng:
        yield eng


def _found(engine: Engine, name: str, **kwargs: object) -> list[tuple[str, str, str]]:
    return [(m.match, m.symbol.qualified_name, m.symbol.citation) for m in engine.symbols(name, **kwargs)]


def test_an_exact_name_is_found_with_its_citation(engine: Engine) -> None:
    assert _found(engine, "ConnectionPool", mode="exact") == [("exact", "ConnectionPool", "src/pool.py:1-9")]
    assert _found(engine, "connectionpool", mode="exact")[0][1] == "ConnectionPool"  # case aside


def test_a_qualified_name_picks_the_one_definition(engine: Engine) -> None:
    assert _found(engine, "ConnectionPool.get") == [("exact", "ConnectionPool.get", "src/pool.py:4-5")]
    assert _found(engine, "ConnectionPool::Slot::release")[0][1] == "ConnectionPool.Slot.release"


def test_the_same_name_twice_lists_code_before_tests(engine: Engine) -> None:
    assert [c for _, _, c in _found(engine, "get", mode="exact")] == [
        "src/pool.py:4-5",
        "tests/test_client.py:1-2",
    ]


def test_prefix_and_fuzzy_matches_follow_exact_ones(engine: Engine) -> None:
    found = _found(engine, "connect")
    assert found[0] == ("exact", "connect", "src/pool.py:12-14")
    assert {q for m, q, _ in found if m == "prefix"} == {"ConnectionPool", "connection_count"}
    assert _found(engine, "ConectionPol", mode="fuzzy")[0][:2] == ("fuzzy", "ConnectionPool")
    assert _found(engine, "ConectionPol", mode="exact") == []


def test_kind_and_path_filters(engine: Engine) -> None:
    assert [q for _, q, _ in _found(engine, "get", kinds=["function"])] == ["get"]
    assert [c for _, _, c in _found(engine, "get", path="tests/**")] == ["tests/test_client.py:1-2"]
    assert _found(engine, "get", path="docs/**") == []


def test_outline_lists_definitions_in_order_nested(engine: Engine) -> None:
    entries = engine.outline("src/pool.py")
    assert [(e.depth, e.symbol.kind, e.symbol.name) for e in entries] == [
        (0, "class", "ConnectionPool"),
        (1, "method", "get"),
        (1, "class", "Slot"),
        (2, "method", "release"),
        (0, "function", "connect"),
    ]
    tree = outline_tree(entries)
    assert [n["name"] for n in tree] == ["ConnectionPool", "connect"]
    assert [n["name"] for n in tree[0]["children"]] == ["get", "Slot"]
    assert tree[1]["citation"] == "src/pool.py:12-14" and tree[1]["doc"] == "Open a pool for ``url``."


def test_outline_of_an_unknown_file_names_it(engine: Engine) -> None:
    with pytest.raises(InputError, match="no document 'src/nope.py'"):
        engine.outline("src/nope.py")
    with pytest.raises(InputError, match="empty symbol name"):
        engine.symbols("")
    assert engine.symbols(" \x1f ") == [] and engine.symbols("::") == []  # no definition has them
    with pytest.raises(InputError, match="valid modes"):
        engine.symbols("get", mode="regex")


def test_before_any_ingest_the_answer_says_so(tmp_path: Path) -> None:
    from hybrid_rag.errors import NoIndexError

    settings = fake_settings(tmp_path / "d")
    engine = Engine(settings)
    with pytest.raises(NoIndexError, match="hybrid-rag ingest"):
        engine.symbols("get")
    engine.close()
