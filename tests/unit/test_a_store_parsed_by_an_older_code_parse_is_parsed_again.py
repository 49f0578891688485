"""A store whose code files were parsed before the parse recorded declarations' types (the meta key
``code_parse`` missing or older than ``CODE_PARSE_VERSION``) has them parsed again by the next
ingest, unchanged files too, from the embedding cache: a call through a typed receiver is then
resolved, where the old rows left it ambiguous until the file was edited."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings
from hybrid_rag.store.schema import CODE_PARSE_VERSION

FILES = {
    "Pool.java": "public class Pool {\n    public int take() { return 1; }\n}\n",
    "Queue.java": "public class Queue {\n    public int take() { return 2; }\n}\n",
    "Worker.java": (
        "public class Worker {\n    private final Pool pool = new Pool();\n\n"
        "    public int run() {\n        return pool.take();\n    }\n}\n"
    ),
}


def _bindings(engine: Engine) -> int:
    return len(engine.store.references(kinds=["binding"]))


def test_an_older_parse_is_parsed_again_at_the_next_ingest_without_embedding(
    tmp_path: Path, settings: Settings
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name, text in FILES.items():
        (src / name).write_text(text)
    with Engine(settings) as engine:
        engine.ingest([src])
        assert _bindings(engine) > 0 and not engine.store.symbols_pending()
        assert not engine.ingest([src]).plan.changed  # a store of this parse is not parsed twice
    db = sqlite3.connect(settings.store_path)  # what a store of the older parse holds
    db.execute("DELETE FROM code_references WHERE kind = 'binding'")
    db.execute("DELETE FROM meta WHERE key = 'code_parse'")
    db.commit()
    db.close()
    with Engine(settings) as engine:
        assert _bindings(engine) == 0 and engine.store.symbols_pending()
        report = engine.ingest([src])  # nothing changed on disk
        assert sorted(report.plan.changed) == sorted(str((src / n).resolve()) for n in FILES)
        assert report.embedded == 0  # the vectors came from the cache
        assert _bindings(engine) > 0 and not engine.store.symbols_pending()
        assert not engine.ingest([src]).plan.changed  # once
    db = sqlite3.connect(settings.store_path)
    assert db.execute("SELECT value FROM meta WHERE key = 'code_parse'").fetchone() == (
        str(CODE_PARSE_VERSION),
    )
    db.close()
