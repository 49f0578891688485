"""A request past its deadline stops its work: SQLite interrupts a running statement (the store's
progress handler) and the query pipeline stops between stages; without a deadline nothing changes."""

from __future__ import annotations

import pytest
from fake_settings import fake_settings
from sqlalchemy import text

from hybrid_rag import deadline
from hybrid_rag.deadline import DeadlineExceeded
from hybrid_rag.engine import Engine
from hybrid_rag.store import MetadataStore

LONG = text(
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 200000000) SELECT count(*) FROM c"
)


def test_sqlite_interrupts_a_statement_past_the_deadline(tmp_path) -> None:
    store = MetadataStore(tmp_path / "store.sqlite3")

    def count() -> int:
        with store._session() as s:
            return s.execute(LONG).scalar_one()

    with pytest.raises(DeadlineExceeded, match="stopped after 0.05 s"):
        deadline.run_within(0.05, count)
    with store._session() as s:  # the connection still works, without a deadline
        assert s.execute(text("SELECT 1")).scalar_one() == 1


def test_no_deadline_means_no_check() -> None:
    assert not deadline.past_deadline()
    deadline.check()
    assert deadline.run_within(60, lambda: 7) == 7


def test_the_query_pipeline_stops_between_stages(tmp_path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Soil\n\nClay soil holds water.\n")
    engine = Engine(fake_settings(tmp_path / "data"))
    engine.ingest([docs])
    try:
        assert engine.query("soil").chunks
        with pytest.raises(DeadlineExceeded), deadline.within(-1):
            engine.query("soil")
    finally:
        engine.close()


def test_an_mcp_read_tool_stops_at_the_request_timeout(tmp_path) -> None:
    # the MCP `search` tool never returned on a hostile glob (issue 25.1): its reads run under
    # server.request_timeout_seconds too, and the agent gets a one-line tool error
    pytest.importorskip("mcp")
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    from hybrid_rag.server.mcp import build_server

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Soil\n\nClay soil holds water.\n")
    settings = fake_settings(tmp_path / "data", {"server.request_timeout_seconds": 1e-9})
    engine = Engine(settings)
    try:
        engine.ingest([docs])
        server = build_server(settings, engine)
        for tool, arguments in [("search", {"query": "soil"}), ("get_context", {"query": "soil"})]:
            with pytest.raises(ToolError, match="time ran out"):
                anyio.run(lambda: server.call_tool(tool, arguments))  # noqa: B023 (run at once)
    finally:
        engine.close()
