"""A folder of Russian, English and Chinese documents end to end: the language of each chunk at
ingest, in stats and documents, as a filter; a Russian question through query, context and ask;
a Chinese one; the --lang override; und for text no detector is sure of."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from engine_fixtures import engine_over
from fake_settings import fake_settings

from hybrid_rag.cli import main
from hybrid_rag.context.selfcheck import confidence
from hybrid_rag.engine import Engine
from hybrid_rag.lang.tokenize import content_terms

RU = """# Учётные записи

Пароль пользователя сбрасывает администратор в разделе настроек учётной записи.
После сброса пользователь получает письмо со ссылкой для входа.

# Отчёты

Отчёты о продажах строятся каждую ночь и рассылаются руководителям отделов по почте.
"""
EN = """# Backups

The server keeps nightly backups of the database for one week.
Restoring a backup takes about ten minutes for a medium database.
"""
ZH = """# 数据库

数据库连接失败时，系统会自动重试三次，然后记录错误日志。
"""
CODES = "\n".join(["# 12 34 56", "", "42 17 99 1000"])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    (root / "accounts.md").write_text(RU, encoding="utf-8")
    (root / "backups.md").write_text(EN, encoding="utf-8")
    (root / "database.md").write_text(ZH, encoding="utf-8")
    (root / "codes.txt").write_text(CODES, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def engine(folder: Path, tmp_path_factory: pytest.TempPathFactory):
    with engine_over(folder, settings=fake_settings(tmp_path_factory.mktemp("data"))) as eng:
        yield eng


def _paths(result: Any) -> list[str]:
    return [Path(c.chunk.path).name for c in result.chunks]


def test_each_chunk_has_its_language_in_stats_and_documents(engine: Engine) -> None:
    counts = engine.store.language_counts()
    assert counts.keys() == {"ru", "en", "zh", "und"}
    assert engine.stats().languages == counts
    by_name = {Path(d.path).name: dict(d.languages) for d in engine.documents()}
    assert set(by_name["accounts.md"]) == {"ru"} and set(by_name["database.md"]) == {"zh"}
    assert set(by_name["codes.txt"]) == {"und"}  # digits only: no language, no error


def test_russian_question_in_other_word_forms_finds_the_russian_paragraph(engine: Engine) -> None:
    result = engine.query("Кто сбрасывает пароли пользователей?", mode="bm25")
    assert _paths(result)[0] == "accounts.md"
    assert result.lang == "ru"
    assert result.to_dict()["lang"] == "ru"


def test_chinese_question_finds_the_chinese_paragraph(engine: Engine) -> None:
    result = engine.query("数据库连接失败怎么办", mode="bm25")
    assert _paths(result)[0] == "database.md"
    assert result.lang == "zh"


def test_the_lang_filter_keeps_one_language(engine: Engine) -> None:
    russian = engine.query("database backups пароль", mode="bm25", filters="lang=ru")
    assert set(_paths(russian)) == {"accounts.md"}
    english = engine.query("database backups пароль", mode="bm25", filters="lang in (EN)")
    assert set(_paths(english)) == {"backups.md"}


def test_the_lang_override_wins_over_detection(engine: Engine) -> None:
    assert engine.query("backups", mode="bm25", lang="ru").lang == "ru"
    assert engine.query("backups", mode="bm25").lang == "und"  # one word: no detector is sure


def test_context_quotes_the_russian_sentence_and_the_self_check_reads_russian(engine: Engine) -> None:
    question = "Кто сбрасывает пароли пользователей?"
    context, _ = engine.context(question, mode="bm25", max_tokens=200)
    assert "Пароль пользователя сбрасывает администратор" in context.render()
    result = engine.query(question, mode="bm25")
    assert set(content_terms(question, "ru")) <= set(content_terms(result.chunks[0].chunk.text, "ru"))
    english_only = confidence(
        result, question, lang="en"
    )  # read as before languages: "пароли" is not "пароль"
    assert confidence(result, question) > english_only


class _Echo:
    """A generator that answers with the system message it was given."""

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        return f"{system} [1]"


def test_ask_tells_the_model_to_answer_in_the_question_s_language(engine: Engine) -> None:
    engine.generator = _Echo()
    try:
        answer = engine.ask("Кто сбрасывает пароли пользователей?", mode="bm25")
        english = engine.ask("How long are the nightly database backups kept?", mode="bm25")
    finally:
        engine.generator = None
    assert answer.text is not None and "(ISO 639-1 code: ru)" in answer.system
    assert "ISO 639-1" not in english.system


def test_the_cli_takes_lang_and_the_lang_filter(
    engine: Engine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = str(engine.settings.data_dir)
    argv = ["--data-dir", data, "query", "backups", "--mode", "bm25", "--json", "--lang", "en"]
    assert main([*argv, "--filter", "lang=en"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lang"] == "en" and {Path(r["path"]).name for r in out["results"]} == {"backups.md"}
    assert main(["--data-dir", data, "query", "x", "--lang", "not a code"]) == 2
    assert "not a language code" in capsys.readouterr().err
    assert main(["--data-dir", data, "query", "x", "--filter", "lang=?"]) == 2
    capsys.readouterr()
    for argv in (["--lang", "xx"], ["--filter", "lang=xx"]):  # two letters, no language: was taken
        assert main(["--data-dir", data, "query", "backups", *argv]) == 2
        err = capsys.readouterr().err
        assert "'xx' is not a language code" in err and "analyzer: af, ar," in err and ", ru," in err
    assert main(["--data-dir", data, "query", "backups", "--mode", "bm25", "--lang", "yue"]) == 0  # detected
    assert main(["--data-dir", data, "stats"]) == 0
    assert "languages:" in capsys.readouterr().out


def test_a_schema_4_store_gets_its_chunk_languages_when_migrated(folder: Path, tmp_path: Path) -> None:
    import sqlite3

    settings = fake_settings(tmp_path / "d")
    eng = Engine(settings)
    eng.ingest([folder])
    eng.close()
    db = sqlite3.connect(settings.store_path)
    db.execute("DROP INDEX ix_chunks_lang")  # schema 6's
    db.execute("ALTER TABLE chunks DROP COLUMN lang")
    db.execute("ALTER TABLE chunks DROP COLUMN duplicate_of")  # schema 5's
    db.execute("ALTER TABLE documents DROP COLUMN created")
    db.execute("DROP TABLE symbols")  # schema 7's
    db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    eng = Engine(settings)
    try:
        assert eng.store.language_counts().keys() == {"ru", "en", "zh", "und"}
    finally:
        eng.close()


def test_the_http_body_takes_a_language() -> None:
    from pydantic import ValidationError

    from hybrid_rag.server.limits import QueryBody, check_query
    from hybrid_rag.settings import FeatureFlags, ServerSettings

    body = QueryBody(query="пароль", lang="ru")
    assert check_query(body, ServerSettings(), FeatureFlags())["lang"] == "ru"
    assert "lang" not in check_query(QueryBody(query="x"), ServerSettings(), FeatureFlags())
    with pytest.raises(ValidationError):
        QueryBody(query="x", lang="русский")


def test_the_http_body_refuses_a_code_that_is_no_language() -> None:
    from hybrid_rag.server.errors import ApiError
    from hybrid_rag.server.limits import QueryBody, check_query
    from hybrid_rag.settings import FeatureFlags, ServerSettings

    with pytest.raises(ApiError) as err:  # 422 naming the field, as for filters and features
        check_query(QueryBody(query="x", lang="xx"), ServerSettings(), FeatureFlags())
    assert err.value.status == 422 and err.value.field == "lang" and "not a language code" in str(err.value)


def test_every_analyzed_language_is_a_code_the_caller_may_name() -> None:
    from hybrid_rag.lang.analyzers import LANGUAGES
    from hybrid_rag.lang.codes import ISO_639_1, KNOWN

    assert len(ISO_639_1) == 184 and set(LANGUAGES) <= KNOWN
