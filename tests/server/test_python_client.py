"""hybrid_rag.client.Client against a real server: the engine's method names, the CLI's JSON
shapes, and the engine's error types raised from error answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_server import KEY, LiveServer

from hybrid_rag.client import Client, ServerError
from hybrid_rag.errors import InputError, NoIndexError


def test_client_methods(live: LiveServer, corpus: Path, tmp_path: Path) -> None:
    with Client(live.url, api_key=KEY) as client:
        assert client.ready()
        result = client.query("area of a circle", top_k=2, mode="hybrid", filters="source_type=code")
        assert result["results"][0]["path"].endswith("geometry.py") and len(result["results"]) <= 2
        context = client.context("clay soil drainage", max_tokens=300)
        assert context["sources"] and context["token_count"] <= 300
        assert client.ask("clay soil drainage")["answer"] is None  # no generator configured
        (corpus / "docs" / "herbs.md").write_text("# Herbs\n\nBasil wants warmth and rich soil.\n")
        job = client.ingest(["docs"], collection="garden")
        assert job["status"] == "done" and job["result"]["added"][0].endswith("herbs.md")
        upload = tmp_path / "ferns.md"
        upload.write_text("# Ferns\n\nFerns like shade and damp ground.\n")
        assert client.upload([upload])["status"] == "done"
        assert client.stats()["documents"] == 4
        assert [v["version"] for v in client.versions()] == [1, 2, 3]
        rolled = client.rollback(2)
        assert rolled["live_version"] == 2 and [Path(p).name for p in rolled["unserved"]] == ["ferns.md"]
        paths = [d["path"] for d in client.documents()["documents"]]  # the served v2's: no ferns.md
        assert not any(p.endswith("ferns.md") for p in paths)
        assert client.delete(next(p for p in paths if p.endswith("herbs.md")))["chunks"] > 0


def test_errors_keep_their_engine_type(live: LiveServer, tmp_path: Path) -> None:
    with Client(live.url, api_key=KEY) as client:
        with pytest.raises(ServerError) as invalid:
            client.query("circle", top_k=10_000)
        assert invalid.value.status == 422 and invalid.value.field == "top_k"
        with pytest.raises(NoIndexError) as missing:  # the engine's type, a 404 naming the version
            client.rollback(42)
        assert missing.value.status == 404 and missing.value.field == "version"
        with pytest.raises(InputError):  # the job failed: an empty folder holds nothing to ingest
            (Path(live.app.state.service.roots[0]) / "empty").mkdir()
            client.ingest(["empty"])
    with Client(live.url, api_key="wrong-key-0123456789") as client, pytest.raises(ServerError) as denied:
        client.stats()
    assert denied.value.status == 401
