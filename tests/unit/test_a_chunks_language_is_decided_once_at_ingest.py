"""A chunk's natural language is decided once, at ingest, right after chunking: the store writes the
language the span carries, and the BM25 term workers read a chunk in it; neither detects it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_fixtures import make_settings

from hybrid_rag.engine import Engine
from hybrid_rag.ingest import languages, term_prefetch
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.settings import BM25Settings
from hybrid_rag.store import rows as store_module  # where the store decides a new chunk's language

TEXTS = {
    "garden.md": "Compost feeds the soil; earthworms turn the clay into loam over the seasons.\n",
    "passwords.md": "Чтобы сбросить пароль, откройте настройки учётной записи и нажмите кнопку.\n",
    "pool.py": "class Pool:\n    # Holt eine Verbindung aus dem Vorrat und wartet darauf.\n    pass\n",
}


def _no_second_detection(text: str, *, code: bool = False) -> object:
    raise AssertionError(f"the language of {text[:30]!r} was detected a second time")


def test_the_store_writes_the_language_ingest_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in TEXTS.items():
        (root / name).write_text(text, encoding="utf-8")
    decided: list[str] = []
    with_languages = languages.with_languages

    def recorded(spans, file):  # type: ignore[no-untyped-def]
        out = with_languages(spans, file)
        decided.extend(f"{Path(file.path).name}:{sp.lang}" for sp in out)
        return out

    monkeypatch.setattr("hybrid_rag.ingest.pipeline.with_languages", recorded)
    monkeypatch.setattr(store_module, "detect_chunk_language", _no_second_detection)
    engine = Engine(make_settings(tmp_path))
    try:
        engine.ingest([root])
        stored = sorted(f"{Path(c.path).name}:{c.lang}" for c in engine.store.iter_chunks())
    finally:
        engine.close()
    assert stored == sorted(decided)
    assert {"garden.md:en", "passwords.md:ru", "pool.py:de"} <= set(stored)  # code: its comments' language


def test_the_term_workers_read_a_chunk_in_the_language_it_carries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hybrid_rag.lang.detect.detect_chunk_language", _no_second_detection)
    monkeypatch.setattr("hybrid_rag.lang.detect.detect_language", _no_second_detection)
    bm25 = BM25Settings()
    monkeypatch.setattr(term_prefetch, "_TOKENIZER", Tokenizer.for_settings(bm25))
    text = "Чтобы сбросить пароли, откройте настройки."
    found = term_prefetch._terms([("a" * 64, text, "ru"), ("b" * 64, text, "und")])
    assert [(sha[0], lang) for sha, lang, _ in found] == [("a", "ru"), ("b", "und")]
    assert found[0][2] == Tokenizer.for_settings(bm25).tokenize(text, "ru")
    assert found[0][2] != found[1][2]  # read as Russian (stemmed), not in the base analysis
