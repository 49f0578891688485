"""``group="file"`` over every surface: ``hybrid-rag query --group file`` (text and ``--json``),
POST /v1/query with ``group``, the Python client and the MCP ``search`` tool answer the same files,
ranked by their evidence, each with its best units' line ranges; each surface refuses a bad ``group``
or ``units_per_file`` naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from grouped_corpus import QUESTION, write_repository
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.cli import main
from hybrid_rag.client import Client
from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    settings = server_settings(tmp_path)
    engine = Engine(settings)
    engine.ingest([write_repository(tmp_path / "repo")])
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    yield server
    server.stop()


def _local(live: LiveServer) -> list[tuple[str, list[int]]]:
    result = live.app.state.service.engine.query(QUESTION, top_k=3, group="file")
    return [(f.path, [u.id for u in f.units]) for f in result.files]


def test_cli_lists_files_with_their_units(
    live: LiveServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _local(live)
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = ["--data-dir", str(live.app.state.service.settings.data_dir)]
    live.stop()  # the CLI opens the data dir itself
    assert main([*data, "query", QUESTION, "--group", "file", "--top-k", "3", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(f["path"], [u["id"] for u in f["units"]]) for f in found["files"]] == expected
    assert [r["id"] for r in found["results"]] == [i for _, ids in expected for i in ids]
    assert main([*data, "query", QUESTION, "--group", "file", "--top-k", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# 3 file(s)")
    assert out[2].startswith("[1] src/pool.py  score=")
    assert out[3].split()[1].startswith("score=") and "id=" in out[3]
    assert main([*data, "query", QUESTION, "--group", "file", "--units-per-file", "1", "--json"]) == 0
    assert {len(f["units"]) for f in json.loads(capsys.readouterr().out)["files"]} == {1}
    with pytest.raises(SystemExit) as refused:
        main([*data, "query", QUESTION, "--group", "folder"])
    assert refused.value.code == 2 and "--group: invalid choice: 'folder'" in capsys.readouterr().err


def test_http_and_the_client_answer_the_files(live: LiveServer) -> None:
    expected = _local(live)
    with live.client() as http:
        grouped = http.post("/v1/query", json={"query": QUESTION, "top_k": 3, "group": "file"}).json()
        chunks = http.post("/v1/query", json={"query": QUESTION, "top_k": 3}).json()
        bad = http.post("/v1/query", json={"query": QUESTION, "group": "folder"})
        bad_units = http.post("/v1/query", json={"query": QUESTION, "group": "file", "units_per_file": 0})
        on_context = http.post("/v1/context", json={"query": QUESTION, "group": "file"})
    assert [(f["path"], [u["id"] for u in f["units"]]) for f in grouped["files"]] == expected
    assert "files" not in chunks and len(chunks["results"]) == 3
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "group"
    assert bad_units.status_code == 422 and bad_units.json()["error"]["field"] == "units_per_file"
    assert on_context.status_code == 422  # only /v1/query groups
    with Client(live.url, api_key=KEY) as client:
        remote = client.query(QUESTION, top_k=3, group="file", units_per_file=2)
    assert [f["path"] for f in remote["files"]] == [path for path, _ in expected]
    assert max(len(f["units"]) for f in remote["files"]) == 2


def test_the_mcp_search_tool_answers_files(live: LiveServer) -> None:
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from hybrid_rag.server.mcp import build_server

    expected = _local(live)
    service = live.app.state.service
    server = build_server(service.settings, service.engine)

    def call(arguments: dict) -> dict:
        return anyio.run(lambda: server.call_tool("search", arguments)).structured_content

    found = call({"query": QUESTION, "top_k": 3, "group": "file"})
    assert [f["path"] for f in found["files"]] == [path for path, _ in expected]
    first = found["files"][0]
    assert first["units"][0]["citation"].startswith("src/pool.py:") and "pool_part_" in first["text"]
    assert "files" not in call({"query": QUESTION, "top_k": 3})
    for arguments in ({"query": QUESTION, "group": "folder"}, {"query": QUESTION, "units_per_file": 0}):
        with pytest.raises(ToolError, match="group|units_per_file"):
            anyio.run(lambda arguments=arguments: server.call_tool("search", arguments))
