"""Reference edges are stored per file and resolved when asked, so they follow every change the
store knows: editing only the callee's file keeps its inbound edges right (its new lines cited,
a renamed definition no longer called), deleting a caller's file drops its outbound edges, a
rolled-back version answers with the references it was built from, and a store from schema 7
records its references at the next ingest."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings
from hybrid_rag.symbols.questions import callers_answer, refs_answer

POOL = textwrap.dedent(
    """\
    def parse_filter(text):
        return text.split()


    def unused():
        return 0
    """
)
APP = textwrap.dedent(
    """\
    from pool import parse_filter


    def run(q):
        return parse_filter(q)
    """
)


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "pool.py").write_text(POOL)
    (src / "app.py").write_text(APP)
    return src


def _callers(answer: dict) -> list[tuple[str, str]]:
    return [(c["qualified_name"], c["citation"]) for c in answer["callers"]]


def test_editing_only_the_callees_file_keeps_its_inbound_edges_right(tmp_path: Path, engine: Engine) -> None:
    src = _project(tmp_path)
    engine.ingest([src])
    first = engine.store.generation()
    answer = engine.references("callers", "parse_filter")
    assert answer["definitions"][0]["citation"] == "pool.py:1-2"
    assert _callers(answer) == [("run", "app.py:4-5")]

    (src / "pool.py").write_text('"""Pool."""\n\nimport re\n\n\n' + POOL)  # the definition moves down
    report = engine.ingest([src])
    assert report.plan.changed == (str((src / "pool.py").resolve()),)  # app.py is not rewritten
    moved = engine.references("callers", "parse_filter")
    assert moved["definitions"][0]["citation"] == "pool.py:6-7"
    assert _callers(moved) == [("run", "app.py:4-5")]  # the inbound edge from the unchanged file
    old = callers_answer(engine.store, "parse_filter", state=first)  # the older state: its own lines
    assert old["definitions"][0]["start_line"] == 1 and len(old["callers"]) == 1

    (src / "pool.py").write_text(POOL.replace("parse_filter", "parse_query"))
    engine.ingest([src])
    gone = engine.references("refs", "parse_filter")
    assert gone["definitions"] == [] and gone["resolved"] == 0
    assert gone["unresolved"] == 2  # the import and the call, both left without a definition
    assert engine.references("callers", "parse_query")["callers"] == []


def test_deleting_a_file_drops_its_outbound_edges(tmp_path: Path, engine: Engine) -> None:
    src = _project(tmp_path)
    engine.ingest([src])
    assert engine.references("refs", "parse_filter")["count"] == 2
    engine.delete([str((src / "app.py").resolve())])
    answer = engine.references("refs", "parse_filter")
    assert answer["count"] == 0 and answer["files"] == []
    assert engine.references("impact", "pool.py")["dependents"] == []
    engine.store.collect_garbage(engine.store.generation())  # the retired revision's rows go too
    db = sqlite3.connect(engine.settings.store_path)
    assert db.execute("SELECT count(*) FROM code_references").fetchone()[0] == engine.store.reference_count()
    db.close()


def test_a_rolled_back_version_answers_with_its_own_references(tmp_path: Path, engine: Engine) -> None:
    src = _project(tmp_path)
    engine.ingest([src])
    version = engine.versions()[-1]["version"]
    (src / "app.py").write_text("def run(q):\n    return q\n")
    engine.ingest([src])
    assert engine.references("callers", "parse_filter")["callers"] == []
    engine.rollback(version)
    assert _callers(engine.references("callers", "parse_filter")) == [("run", "app.py:4-5")]


def test_a_store_from_schema_7_records_its_references_at_the_next_ingest(
    tmp_path: Path, settings: Settings
) -> None:
    from hybrid_rag.store.schema import SCHEMA_VERSION

    src = _project(tmp_path)
    (src / "notes.md").write_text("# Notes\n")
    engine = Engine(settings)
    engine.ingest([src])
    recorded = engine.store.reference_count()
    engine.close()
    db = sqlite3.connect(settings.store_path)
    db.execute("DROP TABLE code_references")
    db.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    engine = Engine(settings)
    assert engine.store.reference_count() == 0 and engine.store.symbols_pending()  # migrated, empty
    assert [s.name for s in engine.store.symbols()] == ["run", "parse_filter", "unused"]  # kept
    report = engine.ingest([src])  # nothing changed on disk
    assert sorted(report.plan.changed) == sorted(str((src / n).resolve()) for n in ("app.py", "pool.py"))
    assert report.embedded == 0  # the vectors came from the cache
    assert engine.store.reference_count() == recorded > 0 and not engine.store.symbols_pending()
    assert refs_answer(engine.store, "parse_filter", state=None)["resolved"] == 2
    assert not engine.ingest([src]).plan.changed  # once
    db = sqlite3.connect(settings.store_path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    db.close()
    engine.close()
