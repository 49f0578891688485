"""Fusion weighs a stage by whether it can read this question against these documents: a
Russian question over English text, with a dense model that reads Russian, is answered by the
dense stage alone (BM25 shares no words with it: its list is noise), and the trace says so. A
question in the index's language, and one whose words the index mostly holds (English names in a
Russian question), keep both stages. The dense model is the hash embedder under the name of a
model that reads Russian."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings

ENGLISH = {
    "operations.md": "# Password resets\n\nTo reset a user's password, open the admin console and press "
    "Reset password. The user gets an email with a link.",
    "backups.md": "# Backups\n\nThe database is backed up every night to the object store and kept for "
    "thirty days.",
    "deploy.md": "# Deploying\n\nThe service is deployed with docker compose; nginx sits in front of it.",
    "pool.py": "class ConnectionPool:\n    def acquire(self):\n        return self.idle.pop()\n",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    docs = write_tree(tmp_path_factory.mktemp("cross") / "docs", {n: t + "\n" for n, t in ENGLISH.items()})
    settings = Settings().with_overrides({"paths.data_dir": str(docs.parent / "data")})
    with engine_over(
        docs, settings=settings, embedder=FakeEmbedder(64, model_name="multilingual-e5-small")
    ) as eng:
        yield eng


def _stages(result) -> set[str]:
    return {t.stage for t in result.trace.timings}


def test_a_russian_question_over_english_text_is_answered_by_the_dense_stage_alone(engine: Engine) -> None:
    question = "как сбросить пароль пользователя"
    hybrid = engine.query(question, mode="hybrid")
    dense = engine.query(question, mode="dense")
    assert [c.id for c in hybrid.chunks] == [c.id for c in dense.chunks]
    assert "bm25" not in _stages(hybrid) and "dense" in _stages(hybrid)
    assert all("bm25" not in c.breakdown for c in hybrid.chunks)
    note = next(n for n in hybrid.trace.notes if n.startswith("BM25 skipped"))
    assert "the question is in ru, the index's text is not (en " in note
    assert "multilingual-e5-small reads ru" in note
    assert hybrid.trace.unread == ""  # the dense stage reads it: nothing the index lacks


def test_a_question_in_the_index_language_keeps_both_stages(engine: Engine) -> None:
    result = engine.query("how do I reset a password", mode="hybrid")
    assert {"bm25", "dense"} <= _stages(result)
    assert not any(n.startswith("BM25 skipped") for n in result.trace.notes)


def test_a_russian_question_made_of_the_index_words_keeps_bm25(engine: Engine) -> None:
    result = engine.query("как настроить docker compose nginx", mode="hybrid")
    assert result.lang == "ru"
    assert "bm25" in _stages(result)
    assert not any(n.startswith("BM25 skipped") for n in result.trace.notes)


def test_a_russian_question_naming_a_class_of_the_code_keeps_bm25(engine: Engine) -> None:
    result = engine.query("как работает ConnectionPool", mode="hybrid")
    assert result.lang == "ru" and "bm25" in _stages(result)
    assert Path(result.chunks[0].chunk.path).name == "pool.py"


def test_bm25_alone_over_a_question_it_cannot_read_says_the_dense_stage_would(engine: Engine) -> None:
    result = engine.query("как сбросить пароль пользователя", mode="bm25")
    assert result.trace.unread.startswith("this index cannot read questions in ru: its text (en ")
    assert "search with the dense stage (mode hybrid or dense), which reads it" in result.trace.unread


def test_the_cross_language_bm25_scale_keeps_bm25_as_before(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("kept")
    docs = root / "docs"
    docs.mkdir()
    for name, text in ENGLISH.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    settings = Settings().with_overrides(
        {"paths.data_dir": str(root / "data"), "retrieval.cross_language_bm25_scale": 1.0}
    )
    eng = Engine(settings, embedder=FakeEmbedder(64, model_name="multilingual-e5-small"))
    try:
        eng.ingest([docs])
        result = eng.query("как сбросить пароль пользователя", mode="hybrid")
        assert {"bm25", "dense"} <= _stages(result)
        assert not any("BM25 skipped" in n for n in result.trace.notes)
    finally:
        eng.close()
