"""``embedding.second_model`` (``second_job.py``): in a long-running process (serve, mcp) the first
question the index cannot read starts the second vector set's build in the background, and its
answer says so and how far; once built, the same question is answered from it, and every surface
says which set answered. A one-shot call starts nothing and names the command; an English
question, or ``second_model: off``, changes nothing. Two hash embedders under MiniLM's and
multilingual-e5's names."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.server.auth import ApiKeys
from hybrid_rag.server.mcp import build_server

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = "multilingual-e5-small"
QUESTION = "как сбросить пароль"
COMMAND = f"`hybrid-rag rebuild --second-model {E5}`"


def english_folder(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "operations.md").write_text(
        "# Operations\n\n## Password resets\n\nTo reset a user's password, open the admin console and "
        "press Reset password.\n\n## Backups\n\nThe database is backed up every night.\n",
        encoding="utf-8",
    )
    (root / "docs" / "geometry.py").write_text(
        "def circle_area(radius):\n    return 3.14159 * radius * radius\n", encoding="utf-8"
    )
    return root


def engine_for(tmp_path: Path, second_model: str = E5) -> Engine:
    settings = server_settings(tmp_path, **{"embedding.second_model": second_model})
    engine = Engine(settings, embedder=FakeEmbedder(64, model_name=MINILM))
    engine.second_embedders.make = lambda model: FakeEmbedder(32, model_name=model)
    engine.ingest([english_folder(tmp_path / "corpus")])
    return engine


def test_a_one_shot_query_starts_nothing_and_names_the_command(tmp_path: Path) -> None:
    engine = engine_for(tmp_path)
    try:
        result = engine.query(QUESTION)
        assert result.trace.unread.startswith("this index cannot read questions in ru")
        assert COMMAND in result.trace.unread and result.trace.vectors == ""
        assert engine.second_set.state == "idle" and engine.indices.get().second is None
    finally:
        engine.close()


def test_in_the_background_the_first_such_question_starts_it_then_it_answers(tmp_path: Path) -> None:
    engine = engine_for(tmp_path)
    engine.second_set.background = True
    try:
        english = engine.query("how do I reset a password")
        assert engine.second_set.state == "idle" and english.trace.unread == ""
        first = engine.query(QUESTION)
        assert f"Second vector set: {E5} is being built in the background (" in first.trace.unread
        assert engine.second_set.wait(30) == "done"
        again = engine.query(QUESTION)
        assert again.trace.vectors == E5 and again.trace.unread == ""
        assert engine.indices.get().second is not None
    finally:
        engine.close()


def test_off_leaves_the_warning_as_it_was(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, second_model="off")
    engine.second_set.background = True
    try:
        result = engine.query(QUESTION)
        assert "Second vector set" not in result.trace.unread and engine.second_set.state == "idle"
    finally:
        engine.close()


def test_http_and_mcp_start_it_and_then_say_which_set_answered(tmp_path: Path) -> None:
    engine = engine_for(tmp_path)
    settings = engine.settings
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    try:
        with server.client() as client:
            found = client.post("/v1/query", json={"query": QUESTION, "top_k": 3}).json()
            assert "is being built in the background" in found["unread"]
            assert engine.second_set.wait(30) == "done"
            found = client.post("/v1/query", json={"query": QUESTION, "top_k": 3}).json()
            assert found["vectors"] == E5 and "unread" not in found
            context = client.post("/v1/context", json={"query": QUESTION}).json()
            assert context["trace"]["vectors"] == E5
        mcp = build_server(settings, engine)
        searched = anyio.run(lambda: mcp.call_tool("search", {"query": QUESTION}))
        assert f"'vectors': '{E5}'" in str(searched) or f'"vectors": "{E5}"' in str(searched)
        evidence = anyio.run(lambda: mcp.call_tool("get_context", {"query": QUESTION}))
        assert f"found with the second vector set ({E5})" in str(evidence)
    finally:
        server.stop()
        engine.close()


@pytest.mark.parametrize("question", ["how do I reset a password", "explain circle_area"])
def test_an_english_question_never_starts_it(tmp_path: Path, question: str) -> None:
    engine = engine_for(tmp_path)
    engine.second_set.background = True
    try:
        assert engine.query(question).trace.vectors == "" and engine.second_set.state == "idle"
    finally:
        engine.close()


def test_a_build_that_fails_says_why_and_names_the_command(tmp_path: Path) -> None:
    from hybrid_rag.errors import ModelError

    engine = engine_for(tmp_path)
    engine.second_set.background = True

    def broken(model: str) -> FakeEmbedder:
        raise ModelError(f"cannot load {model!r}: no such file")

    engine.second_embedders.make = broken
    try:
        engine.query(QUESTION)
        assert engine.second_set.wait(30) == "failed"
        again = engine.query(QUESTION)
        assert (
            f"building it with {E5} failed (cannot load '{E5}': no such file); {COMMAND}"
            in again.trace.unread
        )
        assert engine.second_set.state == "failed"  # not started again on every question
        assert engine.indices.get().second is None
    finally:
        engine.close()
