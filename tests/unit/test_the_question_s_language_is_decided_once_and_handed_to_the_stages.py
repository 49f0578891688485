"""The question's language is decided once, when the typed query is built (``Query.asked``), and
handed to every stage that reads the question (BM25 and its expansion, the reading check, the
context, the self-check, the prompt): no stage asks the detector again, and no context variable
carries a caller's ``lang`` around the stages (``lang/query.py``)."""

from __future__ import annotations

import pytest

import hybrid_rag.lang.query as lang_query
from hybrid_rag.context.answer_gap import Quoted, answer_gap
from hybrid_rag.context.selfcheck import keywords, split_parts
from hybrid_rag.engine import Engine
from hybrid_rag.lang.query import Asked
from hybrid_rag.request import Query

QUESTION = "how does compost improve drainage in heavy clay soil"


@pytest.fixture
def detections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the question-language detector is asked about (uncached, so each ask counts)."""
    asked: list[str] = []
    detect = lang_query.detect_language
    monkeypatch.setattr(lang_query, "_detected", lambda text: asked.append(text) or detect(text))
    return asked


def test_a_context_with_its_self_check_detects_the_question_s_language_once(
    ingested_corpus: Engine, detections: list[str]
) -> None:
    engine = ingested_corpus
    features = {"self_check": True, "expansion": True}
    detections.clear()
    context, checked = engine.context(Query(QUESTION, features=features), max_tokens=300)
    assert context.sources and checked is not None
    assert detections.count(QUESTION) == 1, detections


def test_a_given_language_is_never_detected_and_reaches_every_stage(
    ingested_corpus: Engine, detections: list[str]
) -> None:
    engine = ingested_corpus
    detections.clear()
    features = {"self_check": True, "expansion": True}
    context, _ = engine.context(Query(QUESTION, lang="en", features=features), max_tokens=300)
    assert context.result.lang == "en" and context.sources
    assert QUESTION not in detections


def test_the_stages_read_the_question_in_the_language_handed_to_them() -> None:
    question = "как сбросить пароль пользователя и почту"
    # read as Russian, its stop word "как" goes; read as English, it stays
    assert keywords(question, "ru") == "сбросить пароль пользователя почту"
    assert keywords(question, "en") == "как сбросить пароль пользователя почту"
    parts = split_parts("reset the password; rotate the keys", "en")
    assert parts == ["reset the password", "rotate the keys"]
    quote = Quoted("Пароль пользователя сбрасывает администратор.", False, "ru", None)
    assert answer_gap("кто сбрасывает пароль пользователя", [quote], lang="ru") is None


def test_a_text_made_from_the_question_is_read_in_the_caller_s_language_or_its_own() -> None:
    given, detected = Asked.of("reset password", "PT"), Asked.of(QUESTION)
    assert (given.code, given.given, given.code_of("other words")) == ("pt", True, "pt")
    assert detected.code == lang_query.detect_language(QUESTION).code and not detected.given
    assert detected.code_of("как сбросить пароль пользователя") == "ru"  # a retry read as itself
    assert not hasattr(lang_query, "language_override")  # no context variable carries it any more
