"""BM25 analysis by language: one analyzer configured by a table (stemmer, stop words, bigrams
for scripts without spaces), English exactly as before, undetermined text language-neutral."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import IndexMismatchError
from hybrid_rag.indices.bm25 import MANIFEST_FILE, SUBDIR, BM25IndexManager
from hybrid_rag.lang.analyzers import LANGUAGES, bigrams
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.settings import BM25Settings

ENGLISH = [
    "def get_file_name(path): return os.path.basename(path)",
    "The tokenizer splits identifiers such as getFileName into get, file and name.",
    "Stemming maps running and runs to run so that more documents match.",
]


def _tok(**kw: object) -> Tokenizer:
    return Tokenizer(kind="regex", languages=True, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["regex", "spacy"])
def test_english_terms_are_those_of_the_english_only_tokenizer(kind: str) -> None:
    before = Tokenizer(kind=kind)  # type: ignore[arg-type]
    now = Tokenizer(kind=kind, languages=True)  # type: ignore[arg-type]
    assert now.tokenize_many(ENGLISH, ["en"] * 3) == before.tokenize_many(ENGLISH)
    assert now.tokenize_many(ENGLISH, ["und"] * 3) == before.tokenize_many(ENGLISH)


def test_russian_and_portuguese_words_are_stemmed_and_stop_words_dropped() -> None:
    tok = _tok()
    assert tok.tokenize("Как сбросить пароли пользователей", "ru") == ["сброс", "парол", "пользовател"]
    assert tok.tokenize("Как сбросить пароль пользователя", "ru") == ["сброс", "парол", "пользовател"]
    assert tok.tokenize("as senhas dos usuários", "pt") == ["senh", "usuári"]


def test_chinese_and_thai_runs_become_character_bigrams() -> None:
    tok = _tok()
    assert tok.tokenize("数据库连接", "zh") == ["数据", "据库", "库连", "连接"]
    assert tok.tokenize("ภาษาไทย", "th") == bigrams("ภาษาไทย")
    assert tok.tokenize("Python中文", "und") == ["python", "中文"]  # any language: by script


def test_identifiers_split_in_every_language() -> None:
    assert _tok().tokenize("вызовите getFileName", "ru") == ["вызов", "getfilename", "get", "file", "name"]


def test_a_language_without_a_table_row_is_analysed_neutrally() -> None:
    tok = _tok()
    assert "xx" not in LANGUAGES
    assert tok.tokenize("Habari za asubuhi", "xx") == tok.tokenize("Habari za asubuhi", "und")
    assert tok.tokenize("Habari za asubuhi", "und") == ["habari", "za", "asubuhi"]


def test_texts_without_languages_are_detected() -> None:
    tok = _tok()
    assert tok.tokenize("Как сбросить пароль пользователя?") == tok.tokenize(
        "Как сбросить пароль пользователя?", "ru"
    )


def _index(texts: list[str], langs: list[str]) -> BM25IndexManager:
    manager = BM25IndexManager(BM25Settings(tokenizer="regex"))
    manager.build(np.arange(len(texts), dtype=np.int64), texts, langs=langs)
    return manager


RU = [
    "Пароль пользователя сбрасывается администратором в настройках учётной записи.",
    "Отчёты строятся каждую ночь и рассылаются по почте.",
    "Сервер хранит резервные копии базы данных неделю.",
]


def test_russian_question_finds_the_paragraph_in_another_word_form() -> None:
    index = _index(RU, ["ru"] * 3)
    hits = index.search("как сбросить пароли пользователей", 3)
    assert hits and hits[0].id == 0
    assert [h.id for h in index.search("резервных копий", 3)] == [2]


def test_a_query_in_a_language_rare_in_the_index_is_read_in_the_index_languages() -> None:
    tok = _tok()
    tok.index_languages = {"en": 98, "fr": 2}  # two French docstrings among English chunks
    assert tok.tokenize_query("fichiers", "fr") == tok.tokenize("fichiers", "en")
    tok.index_languages = {"en": 50, "fr": 50}
    assert tok.tokenize_query("fichiers", "fr") == ["fichi"]


def test_a_code_chunk_keeps_the_base_analysis_whatever_its_comments() -> None:
    from hybrid_rag.lang.tokenize import analysis_language
    from hybrid_rag.types import Chunk, SourceType

    def chunk(source_type: SourceType) -> Chunk:
        return Chunk(1, 1, "a", 0, 1, 1, "x", 1, "s", source_type, "python", "c", lang="fr")

    assert analysis_language(chunk(SourceType.CODE)) == "und"
    assert analysis_language(chunk(SourceType.TEXT)) == "fr"


def test_a_mixed_index_reads_each_chunk_and_query_in_its_language() -> None:
    index = _index([*RU, *ENGLISH], ["ru"] * 3 + ["en"] * 3)
    assert index.search("пароли пользователей", 3)[0].id == 0
    assert index.search("file name", 3)[0].id in (3, 4)


def test_an_undetermined_query_is_read_in_the_index_languages() -> None:
    index = _index(RU, ["ru"] * 3)
    assert index.tokenizer.tokenize_query("пароли", "und") == ["парол", "пароли"]  # Russian, then neutral
    assert index.search("пароли", 3, lang="und")[0].id == 0


def test_the_language_override_wins_over_detection() -> None:
    tok = _tok()
    tok.index_languages = {"ru": 2, "pt": 2}
    assert tok.tokenize_query("senhas", "pt") == ["senh"]
    assert tok.tokenize_query("senhas", "ru") == ["senhas"]


def test_the_manifest_records_chunks_per_language_and_a_load_restores_them(tmp_path: Path) -> None:
    index = _index([*RU, *ENGLISH], ["ru"] * 3 + ["en"] * 3)
    index.save(tmp_path)
    manifest = json.loads((tmp_path / SUBDIR / MANIFEST_FILE).read_text())
    assert manifest["languages"] == {"en": 3, "ru": 3}
    loaded = BM25IndexManager.load(tmp_path, index.settings)
    assert loaded.tokenizer.index_languages == {"en": 3, "ru": 3}


def test_an_index_of_the_english_only_analysis_is_refused_with_rebuild(tmp_path: Path) -> None:
    index = _index(RU, ["ru"] * 3)
    index.save(tmp_path)
    manifest_path = tmp_path / SUBDIR / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest["tokenizer"]["tokenizer_version"] = 1  # as written before languages
    del manifest["params"]["languages"]
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match="run `hybrid-rag rebuild`"):
        BM25IndexManager.load(tmp_path, index.settings)
