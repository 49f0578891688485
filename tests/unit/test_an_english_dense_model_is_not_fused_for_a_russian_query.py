"""A query in a language the data dir's dense model does not read (MiniLM: English only) is
answered by BM25 alone where the chunks are in its language, and the trace says so; an English
query, or a model that reads the language, keeps the fused ranking."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings

RUSSIAN = {
    "parol.txt": "Чтобы сбросить пароль, откройте настройки учётной записи и нажмите «Забыли пароль».",
    "pogoda.txt": "Погода в горах меняется быстро: утром солнце, а к вечеру часто идёт сильный дождь.",
    "poezd.txt": "Поезд отправляется с центрального вокзала каждый час, билеты продаются в кассе.",
    "kniga.txt": "Эта книга рассказывает об истории города и о людях, которые его построили.",
}
ENGLISH = {"reset.txt": "To reset your password, open the account settings and press Forgot password."}


def _engine(tmp_path: Path, model_name: str, scale: float = 0.0) -> Engine:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in {**RUSSIAN, **ENGLISH}.items():
        (docs / name).write_text(text, encoding="utf-8")
    settings = Settings().with_overrides(
        {
            "paths.data_dir": str(tmp_path / f"data-{model_name.replace('/', '_')}-{scale}"),
            "retrieval.unread_language_dense_scale": scale,
        }
    )
    engine = Engine(settings, embedder=FakeEmbedder(64, model_name=model_name))
    engine.ingest([docs])
    return engine


def _ranking(result) -> list[str]:
    return [Path(c.chunk.path).name for c in result.chunks]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    engine = _engine(tmp_path_factory.mktemp("minilm"), "sentence-transformers/all-MiniLM-L6-v2")
    yield engine
    engine.close()


def test_a_russian_query_is_answered_by_bm25_alone_and_the_trace_says_why(minilm: Engine) -> None:
    query = "как сбросить пароль учётной записи"
    hybrid = minilm.query(query, mode="hybrid")
    bm25 = minilm.query(query, mode="bm25")
    assert _ranking(hybrid) == _ranking(bm25) and _ranking(hybrid)[0] == "parol.txt"
    notes = " ".join(hybrid.trace.notes)
    assert "does not read the query's language (ru)" in notes and "BM25 only" in notes
    assert "dense" not in {t.stage for t in hybrid.trace.timings}
    assert "does not read" in str(hybrid.to_dict()["trace"])


def test_an_english_query_keeps_both_stages(minilm: Engine) -> None:
    result = minilm.query("how do I reset my password in the account settings", mode="hybrid")
    assert not any("does not read" in n for n in result.trace.notes)
    assert "dense" in {t.stage for t in result.trace.timings}


def test_a_model_that_reads_russian_keeps_the_dense_stage(tmp_path: Path) -> None:
    engine = _engine(tmp_path, "multilingual-e5-small")
    try:
        result = engine.query("как сбросить пароль учётной записи", mode="hybrid")
        assert not any("does not read" in n for n in result.trace.notes)
        assert "dense" in {t.stage for t in result.trace.timings}
    finally:
        engine.close()


def test_a_scale_between_keeps_dense_at_a_lower_weight(tmp_path: Path) -> None:
    engine = _engine(tmp_path, "sentence-transformers/all-MiniLM-L6-v2", scale=0.5)
    try:
        result = engine.query("как сбросить пароль учётной записи", mode="hybrid")
        assert any("dense weight x0.5" in n for n in result.trace.notes)
        assert "dense" in {t.stage for t in result.trace.timings}
    finally:
        engine.close()
