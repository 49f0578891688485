"""The fusion rule per call (the typed query's ``fusion``, ``retrieval/fusion.py``) on every
surface: ``hybrid-rag query|context|ask --fusion RULE``, ``"fusion"`` in the body of POST
/v1/query (and /v1/context, /v1/ask), the MCP ``search`` (and ``get_context``) tool's ``fusion``
argument. Each ranks as the engine does with that rule; a rule that is none is the engine's error
naming the valid ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.request import Query
from hybrid_rag.retrieval.fusion import FusionMode
from hybrid_rag.server.auth import ApiKeys

QUESTION = "compost drainage for clay soil"
VALID = "valid values: rrf, weighted, zscore, relative_score, dbsf"
DOCS = {
    "soil.md": "# Soil\n\nCompost improves drainage in heavy clay soil and keeps moisture in sandy soil.\n",
    "worms.md": "# Worms\n\nEarthworms thrive when the soil is rich in organic matter such as compost.\n",
    "tomato.md": "# Tomatoes\n\nTomatoes need full sun, regular watering and well drained soil.\n",
    "clay.md": "# Clay\n\nHeavy clay holds water; drainage improves with grit and organic matter.\n",
}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    root = tmp_path / "notes"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    settings = server_settings(tmp_path, **{"retrieval.fusion": "rrf"})
    engine = Engine(settings)
    engine.ingest([root])
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    yield server
    server.stop()
    engine.close()


def scores_by_rule(engine: Engine) -> dict[str, list[float]]:
    """The engine's own scores for QUESTION under each rule: what every surface must show."""
    rules = ("rrf", "zscore")
    out = {
        rule: [round(c.score, 4) for c in engine.query(Query(QUESTION, fusion=rule)).chunks] for rule in rules
    }
    assert out["rrf"] != out["zscore"], "the two rules must rank apart, or the test proves nothing"
    return out


def test_the_cli_passes_the_fusion_rule(
    live: LiveServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = scores_by_rule(live.app.state.service.engine)
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = ["--data-dir", str(live.app.state.service.settings.data_dir)]
    live.stop()
    for rule in ("rrf", "zscore"):
        assert main([*data, "query", QUESTION, "--fusion", rule, "--json"]) == 0
        shown = [round(r["score"], 4) for r in json.loads(capsys.readouterr().out)["results"]]
        assert shown == expected[rule]
    assert main([*data, "context", QUESTION, "--fusion", "zscore", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sources"]
    assert main([*data, "ask", QUESTION, "--fusion", "dbsf"]) == 0
    capsys.readouterr()
    assert main([*data, "query", QUESTION, "--fusion", "borda"]) != 0
    assert "unknown FusionMode 'borda'; " + VALID in capsys.readouterr().err


def test_http_passes_the_fusion_rule(live: LiveServer) -> None:
    expected = scores_by_rule(live.app.state.service.engine)
    with live.client() as http:
        for rule in ("rrf", "zscore"):
            found = http.post("/v1/query", json={"query": QUESTION, "fusion": rule}).json()
            assert [round(r["score"], 4) for r in found["results"]] == expected[rule]
        context = http.post("/v1/context", json={"query": QUESTION, "fusion": "zscore"})
        ask = http.post("/v1/ask", json={"query": QUESTION, "fusion": "dbsf"})
        bad = http.post("/v1/query", json={"query": QUESTION, "fusion": "borda"})
    assert context.status_code == 200 and ask.status_code == 200
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "fusion"
    assert VALID in bad.json()["error"]["message"]


def test_mcp_search_passes_the_fusion_rule(live: LiveServer) -> None:
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from hybrid_rag.server.mcp import build_server

    service = live.app.state.service
    expected = scores_by_rule(service.engine)
    server = build_server(service.settings, service.engine)

    def search(arguments: dict) -> dict:
        result = anyio.run(lambda: server.call_tool("search", arguments))
        return json.loads("".join(getattr(c, "text", "") for c in result.content))

    for rule in ("rrf", "zscore"):
        found = search({"query": QUESTION, "fusion": rule})
        assert [round(r["score"], 4) for r in found["results"]] == expected[rule]
    with pytest.raises(ToolError, match=VALID):
        search({"query": QUESTION, "fusion": "borda"})
    context = anyio.run(lambda: server.call_tool("get_context", {"query": QUESTION, "fusion": "zscore"}))
    assert "[1]" in "".join(getattr(c, "text", "") for c in context.content)
    with pytest.raises(ToolError, match=VALID):
        anyio.run(lambda: server.call_tool("get_context", {"query": QUESTION, "fusion": "borda"}))


def test_the_cli_names_every_rule() -> None:
    from hybrid_rag.cli.common import FUSION_RULES

    assert FUSION_RULES.split(", ") == [rule.value for rule in FusionMode]
