"""Before the first ingest: ``stats`` says the model ``embedding.model: auto`` names is provisional
(the first ingest chooses it); a query, a context, ``stats`` and a server that only reads leave a
data dir that was never ingested uncreated, and the query says why in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_settings import fake_settings
from fastapi.testclient import TestClient

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.models.auto import AutoEmbedder
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.server.app import create_app
from hybrid_rag.server.auth import ApiKeys
from hybrid_rag.settings import EmbeddingSettings, Settings

KEY = "k" * 24


def test_stats_before_the_first_ingest_says_the_model_is_provisional(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "auto")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "stats"]) == 0
    model = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("model:"))
    assert (
        "all-MiniLM-L6-v2" in model
        and "(provisional: embedding.model auto chooses at the first ingest" in model
    )
    assert main(["--data-dir", data, "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_provisional"] is True


def test_after_the_first_ingest_the_model_is_chosen(tmp_path: Path) -> None:
    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path / "data")})
    auto = AutoEmbedder(EmbeddingSettings(model="auto"), lambda s: FakeEmbedder(16, model_name=s.model))
    engine = Engine(settings, embedder=auto)
    try:
        assert engine.stats().model_provisional is True
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "a.md").write_text("The rotor wing stalls early at low speed.\n")
        engine.ingest([docs])
        stats = engine.stats()
        assert stats.model == "all-MiniLM-L6-v2" and stats.model_provisional is False
    finally:
        engine.close()
    fixed = Engine(fake_settings(base=settings))
    try:
        assert fixed.stats().model_provisional is False  # a model named in the settings is no guess
    finally:
        fixed.close()


@pytest.mark.parametrize(
    "command", [["query", "rotor"], ["context", "rotor"], ["ask", "rotor"], ["symbols", "rotor"]]
)
def test_a_read_on_a_data_dir_never_ingested_is_an_error_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = tmp_path / "never"
    assert main(["--data-dir", str(data), *command]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hybrid-rag: error: ") and str(data) in err and "hybrid-rag ingest PATH" in err
    assert "\n" not in err
    assert not data.exists()


def test_a_server_that_only_reads_makes_no_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "never"
    settings = fake_settings(data)
    with TestClient(create_app(settings, keys=ApiKeys.of((KEY,)))) as client:
        headers = {"Authorization": f"Bearer {KEY}"}
        answer = client.post("/v1/query", json={"query": "rotor"}, headers=headers)
        assert answer.status_code == 409 and "hybrid-rag ingest PATH" in answer.json()["error"]["message"]
        assert client.get("/v1/stats", headers=headers).status_code == 200
        assert client.get("/").status_code == 200
    assert not data.exists()
