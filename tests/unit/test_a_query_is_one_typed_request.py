"""A question travels as one typed, frozen request (``hybrid_rag/request.py``): the engine takes
a ``Query`` (or text with its options as keywords, folded into one), an unknown option is named
instead of passed on, the question's language is analysed once, and the CLI, the HTTP API and
MCP all build the same model."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.request import Query
from hybrid_rag.settings import FeatureFlags, ServerSettings


def test_a_query_is_frozen_and_keeps_its_own_copy_of_the_features() -> None:
    features = {"rerank": False}
    query = Query.of("circle area", top_k=2, mode="bm25", features=features)
    features["rerank"] = True
    assert query.features == {"rerank": False}
    with pytest.raises(dataclasses.FrozenInstanceError):
        query.top_k = 5  # type: ignore[misc]
    assert Query.of(query) is query and Query.of(query, top_k=4).top_k == 4


def test_the_engine_answers_a_query_as_it_answers_its_keywords(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    typed = engine.query(Query("circle area radius", top_k=2, mode="bm25", features={"mmr": False}))
    keywords = engine.query("circle area radius", top_k=2, mode="bm25", features={"mmr": False})
    assert [c.id for c in typed.chunks] == [c.id for c in keywords.chunks] != []
    assert typed.mode == "bm25" and typed.chunks[0].chunk.path == "src/geometry.py"
    result, _ = engine.retrieve(Query("circle area radius", absolute_paths=True), self_check=False)
    assert result.chunks[0].chunk.path.startswith(str(corpus))
    context, _ = engine.context(Query("soil drainage compost", lang="en"), max_tokens=400)
    assert context.sources and context.result.lang == "en"


def test_an_unknown_query_option_is_named(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    with pytest.raises(InputError, match="unknown query option topk; the options are top_k"):
        engine.query("circle area", topk=3)


def test_the_question_s_language_is_analysed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import hybrid_rag.lang.query as lang_query

    calls: list[str] = []
    detect = lang_query.detect_language
    monkeypatch.setattr(lang_query, "_detected", lambda text: calls.append(text) or detect(text))
    query = Query("как сбросить пароль пользователя")
    assert query.language.code == query.language.code == query.asked.code == "ru"
    assert calls == ["как сбросить пароль пользователя"]
    assert Query("reset password", lang="pt").language.code == "pt"


def test_the_cli_and_the_servers_build_the_same_request() -> None:
    from hybrid_rag.cli.common import _query
    from hybrid_rag.server.limits import QueryBody, query_of

    args = argparse.Namespace(
        text="circle area", top_k=3, mode="bm25", filter=["source_type=code"], lang="en",
        absolute_paths=False, rerank=False,
    )  # fmt: skip
    from_cli = _query(args)
    body = QueryBody(
        query="circle area", top_k=3, mode="bm25", filters=["source_type=code"], lang="en",
        features={"rerank": False},
    )  # fmt: skip
    from_http = query_of(body, ServerSettings(), FeatureFlags())
    assert isinstance(from_cli, Query) and from_cli == from_http
