"""What users of the code-search prompt rely on: Russian code questions are recognised as code,
and a context can cite as ``[n | file]``."""

from __future__ import annotations

import pytest
from fake_settings import fake_settings

from hybrid_rag.context.render import cite
from hybrid_rag.engine import Engine
from hybrid_rag.retrieval.routing import looks_like_code_query


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("объясни код", True),
        ("что делает этот код?", True),
        ("метод класса Parser", True),
        ("какая функция вызывает метод", True),
        ("функция", False),  # one weak word, like "function" alone
        ("метод характеристик в аэродинамике", False),
        ("кодекс законов", False),
        ("погода в Москве", False),
    ],
)
def test_russian_code_questions_are_code(query: str, code: bool) -> None:
    assert looks_like_code_query(query) is code


def test_doc_file_citations() -> None:
    assert cite(3, "/src/app.py", 10, 20, "doc_file") == "[3 | /src/app.py]"
    assert cite(3, "/src/app.py", 10, 20) == "[3] /src/app.py:10-20"


def test_context_cites_in_the_configured_style(tmp_path, corpus) -> None:
    engine = Engine(fake_settings(tmp_path / "data", {"context.citation_style": "doc_file"}))
    engine.ingest([corpus])
    context, _ = engine.context("compost drainage clay soil", features={"self_check": False})
    assert context.sources
    for s in context.sources:
        assert f"[{s.citation} | {s.path}]" in context.render()
        assert f"{s.path}:{s.start_line}-{s.end_line}" not in context.render()
    engine.close()
