"""After a rollback, every read that goes with a result reads the version served, not the store's
present: /v1/lines returns the text a citation quotes, /v1/documents and `documents` list that
version's files, stats counts them."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys

OLD = "# Ops\n\nRestart the frobnicator with systemctl restart frob.\n"
NEW = "# Ops\n\nNothing here about services any more.\n"


@pytest.fixture
def rolled_back(tmp_path: Path) -> tuple[Engine, Path]:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ops.md").write_text(OLD)
    settings = server_settings(tmp_path)
    engine = Engine(settings)
    engine.ingest([root])
    (root / "ops.md").write_text(NEW)
    (root / "later.md").write_text("# Later\n\nA file the first version never had.\n")
    engine.ingest([root])
    engine.rollback(1)
    return engine, root


def test_lines_and_documents_over_http_are_the_served_versions(rolled_back: tuple[Engine, Path]) -> None:
    engine, root = rolled_back
    server = LiveServer(engine.settings, ApiKeys.of((KEY,)), engine)
    try:
        with server.client() as http:
            hit = http.post("/v1/query", json={"query": "restart the frobnicator", "top_k": 1}).json()
            cited = hit["results"][0]
            lines = http.get("/v1/lines", params={"path": cited["path"]}).json()
            later = http.get("/v1/lines", params={"path": str((root / "later.md").resolve())})
            listed = http.get("/v1/documents").json()
            stats = http.get("/v1/stats").json()
    finally:
        server.stop()
    assert "frobnicator" in cited["text"]
    assert [r["text"] for r in lines["lines"]] == OLD.splitlines()
    assert later.status_code == 404
    assert [d["path"] for d in listed["documents"]] == ["ops.md"]
    assert stats["documents"] == 1 and stats["index_behind_store"] is True
    assert "rolled back" in stats["behind"]


def test_the_cli_lists_the_served_versions_documents(
    rolled_back: tuple[Engine, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    engine, _ = rolled_back
    data = str(engine.settings.data_dir)
    engine.close()
    capsys.readouterr()
    assert main(["--data-dir", data, "documents", "--json"]) == 0
    out = capsys.readouterr().out
    assert "ops.md" in out and "later.md" not in out
    assert main(["--data-dir", data, "stats"]) == 0
    out = capsys.readouterr().out
    assert "documents:  1" in out and "rolled back to v1" in out
