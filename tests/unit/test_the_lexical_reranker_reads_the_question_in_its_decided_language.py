"""The lexical reranker reads the question in the language decided for it once (``Asked``: the
caller's ``lang`` or the one detected when the typed query was built), never detecting it again;
before, it ran the detector over the question with every call (``retrieval/rerank.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from engine_fixtures import engine_over, write_tree

import hybrid_rag.lang.detect as detect
from hybrid_rag.engine import Engine
from hybrid_rag.lang.normalize import normalize_text
from hybrid_rag.lang.query import Asked
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.request import Query
from hybrid_rag.retrieval.rerank import LexicalReranker, rerank_candidates
from hybrid_rag.settings import RerankSettings
from hybrid_rag.types import Chunk, ScoredChunk, SourceType

RUSSIAN = "Пароль пользователя сбрасывает администратор через панель управления."
ENGLISH = "The administrator resets a user's password from the control panel."


def scored(chunk_id: int, text: str, score: float) -> ScoredChunk:
    path = f"doc{chunk_id}.md"
    chunk = Chunk(chunk_id, chunk_id, path, 0, 1, 1, text, 10, "x" * 64, SourceType.TEXT, "md", "")
    return ScoredChunk(chunk, score, {})


@pytest.fixture
def detected(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the language detector reads (the tokenizer's and the question's detections)."""
    texts: list[str] = []
    real = detect.detect_language

    def recording(text: str) -> detect.Language:
        texts.append(text)
        return real(text)

    monkeypatch.setattr(detect, "detect_language", recording)
    import hybrid_rag.lang.query as lang_query

    monkeypatch.setattr(lang_query, "detect_language", recording)
    lang_query._detected.cache_clear()
    return texts


def test_the_question_is_read_in_the_language_handed_to_the_reranker(detected: list[str]) -> None:
    reranker = LexicalReranker(Tokenizer(kind="regex", languages=True))
    candidates = [scored(1, RUSSIAN, 0.5)]
    question = "пароли"  # Russian stems it to the candidate's "пароль"; read as English, no match
    as_russian = reranker.score_asked(Asked.of(question, "ru"), candidates)
    as_english = reranker.score_asked(Asked.of(question, "en"), candidates)
    assert as_russian[0] > 0 and as_english[0] == 0
    assert question not in detected and normalize_text(question) not in detected


def test_the_pipeline_s_rerank_takes_the_decided_language(detected: list[str]) -> None:
    reranker = LexicalReranker(Tokenizer(kind="regex", languages=True))
    candidates = [scored(1, ENGLISH, 0.9), scored(2, RUSSIAN, 0.1)]
    question = "кто сбрасывает пароли пользователя"
    settings = RerankSettings(top_n_in=2, blend="none")
    out = rerank_candidates(reranker, question, candidates, settings, Asked.of(question, "ru"))
    assert [c.id for c in out] == [2, 1]
    assert question not in detected
    # the Reranker call decides the language itself, once, as the typed query would
    plain = reranker.score(question, candidates)
    assert np.array_equal(plain, reranker.score_asked(Asked.of(question), candidates))


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    docs = write_tree(tmp_path_factory.mktemp("lexical") / "docs", {"ru.md": RUSSIAN, "en.md": ENGLISH})
    with engine_over(docs, rerank__backend="lexical") as eng:
        yield eng


def test_a_query_with_a_given_language_never_detects_its_question(
    engine: Engine, detected: list[str]
) -> None:
    question = "кто сбрасывает пароли пользователя"
    result = engine.query(Query(question, lang="ru", features={"rerank": True}))
    assert result.chunks and any("lexical" in c.breakdown for c in result.chunks)
    assert result.chunks[0].path.endswith("ru.md")
    assert question not in detected and normalize_text(question) not in detected, detected
