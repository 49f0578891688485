"""Callers, callees and uses across two small real files per language (tests/fixtures/references):
a pool file that defines ``ConnectionPool`` with ``take`` calling ``open``, and ``parse_filter``;
an app file that imports them and calls them. Each question is answered from the stored
references, resolved through imports, qualifiers (``self``/``this``, ``Foo::new``, ``pkg.F``) and
unique names, and every answer cites ``path:start-end``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "references"

# language folder -> (parse_filter's name, its callers, take's name, take's callers, run's callees)
CASES = {
    "python": (
        "parse_filter",
        ["run"],
        "take",
        ["run"],
        ["ConnectionPool", "ConnectionPool.take", "parse_filter"],
    ),
    "js": (
        "parseFilter",
        ["main"],
        "take",
        ["main"],
        ["ConnectionPool", "ConnectionPool.take", "parseFilter"],
    ),
    # ``const pool: Pool``: its declared type's method (symbols/bindings.py), not a guess between two
    "ts": (
        "parseFilter",
        ["main"],
        "open",
        ["ConnectionPool.take"],
        ["ConnectionPool", "Pool.take", "parseFilter"],
    ),
    "go": (
        "ParseFilter",
        ["main.run"],
        "Take",
        ["main.run"],
        ["pool.NewPool", "pool.ConnectionPool.Take", "pool.ParseFilter"],
    ),
    "rust": (
        "parse_filter",
        ["run"],
        "take",
        ["run"],
        ["ConnectionPool::new", "ConnectionPool::take", "parse_filter"],
    ),
    "java": (
        "parseFilter",
        ["com.example.app.Main.run"],
        "take",
        ["com.example.app.Main.run"],
        [
            "com.example.db.ConnectionPool",
            "com.example.db.ConnectionPool.take",
            "com.example.db.ConnectionPool.parseFilter",
        ],
    ),
    "c": ("pool_open", ["pool_take"], "pool_take", ["run"], ["pool_take"]),
}


def _copy(tmp_path: Path, language: str) -> Path:
    root = tmp_path / language
    shutil.copytree(FIXTURES / language, root)
    return root


def _callers(answer: dict) -> list[str]:
    return [c["qualified_name"] for c in answer["callers"]]


@pytest.mark.parametrize("language", sorted(CASES))
def test_callers_and_callees_of_small_real_files(tmp_path: Path, engine: Engine, language: str) -> None:
    parse, parse_callers, take, take_callers, run_callees = CASES[language]
    engine.ingest([_copy(tmp_path, language)])
    assert engine.store.reference_count() > 0
    found = engine.references("callers", parse)
    assert _callers(found) == parse_callers
    for caller in found["callers"]:
        start, end = caller["start_line"], caller["end_line"]
        assert caller["citation"] == f"{caller['path']}:{start}-{end}"
        assert all(start <= line <= end for line in caller["lines"])
        assert not caller["ambiguous"]
    assert _callers(engine.references("callers", take)) == take_callers
    run = "main" if language in {"js", "ts"} else "run"
    callees = engine.references("callees", run)
    resolved = [c["definition"]["qualified_name"] for c in callees["callees"] if c["status"] == "resolved"]
    assert sorted(resolved) == sorted(run_callees)


def test_a_call_two_levels_up_is_found_with_depth(tmp_path: Path, engine: Engine) -> None:
    engine.ingest([_copy(tmp_path, "python")])
    one = engine.references("callers", "parse_filter")
    two = engine.references("callers", "parse_filter", depth=2)
    assert [(c["qualified_name"], c["depth"]) for c in one["callers"]] == [("run", 1)]
    assert [(c["qualified_name"], c["depth"]) for c in two["callers"]] == [("run", 1), ("main", 2)]
    deeper = engine.references("callees", "main", depth=2)
    assert {(c["name"], c["depth"]) for c in deeper["callees"] if c["status"] == "resolved"} >= {
        ("run", 1),
        ("parse_filter", 2),
    }
    library = [c for c in deeper["callees"] if c["name"] == "basename"]
    assert library and library[0]["status"] == "unresolved"  # os.path is outside the index


def test_refs_lists_every_use_grouped_by_file_with_the_import(tmp_path: Path, engine: Engine) -> None:
    engine.ingest([_copy(tmp_path, "python")])
    answer = engine.references("refs", "ConnectionPool")
    assert [d["citation"] for d in answer["definitions"]] == ["pkg/pool.py:4-9"]
    (group,) = answer["files"]
    assert group["path"] == "pkg/app.py"
    assert [(u["kind"], u["line"], u["status"], u["via"]) for u in group["uses"]] == [
        ("import", 3, "resolved", "import"),
        ("call", 7, "resolved", "import"),
    ]
    assert group["uses"][1]["scope"]["citation"] == "pkg/app.py:6-9"


def test_self_calls_resolve_to_the_enclosing_class(tmp_path: Path, engine: Engine) -> None:
    engine.ingest([_copy(tmp_path, "python")])
    answer = engine.references("refs", "open")
    (use,) = answer["files"][0]["uses"]
    assert (use["qualifier"], use["via"], use["definition"]["qualified_name"]) == (
        "self",
        "self",
        "ConnectionPool.open",
    )


def test_impact_of_a_file_ranks_its_dependents(tmp_path: Path, engine: Engine) -> None:
    engine.ingest([_copy(tmp_path, "python")])
    answer = engine.references("impact", "pkg/pool.py", depth=2)
    assert answer["kind"] == "path" and len(answer["definitions"]) == 4
    ranked = [(d["qualified_name"], d["depth"]) for d in answer["dependents"]]
    assert ranked[0] == ("run", 1)  # three uses: ConnectionPool(), take(), parse_filter()
    assert ("main", 2) in ranked
    assert answer["dependents"][0]["score"] > answer["dependents"][-1]["score"]
    assert [f["path"] for f in answer["files"]] == ["pkg/app.py"]
    by_name = engine.references("impact", "parse_filter", depth=1)
    assert by_name["kind"] == "name"
    assert [d["qualified_name"] for d in by_name["dependents"]] == ["run", None]  # None: the import
