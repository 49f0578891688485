"""PyStemmer 2.x (which llama-index-retrievers-bm25 pins) has no Polish, Czech, Estonian, Persian,
Esperanto or Sesotho stemmer: a term detected in one of them is left unstemmed, with one warning a
process, never a KeyError; and the tokenizer's identity says so, so that an index built with
the stemmer is rebuilt rather than searched with other terms."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import Stemmer

from hybrid_rag.lang import analyzers
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.settings import BM25Settings

LACKING = ("czech", "esperanto", "estonian", "persian", "polish", "sesotho")  # PyStemmer 2.2's gaps


def _clear() -> None:
    for name in ("missing_stemmers", "_warn_missing"):  # per-process caches
        cached = getattr(analyzers, name, None)
        if cached is not None:
            cached.cache_clear()


@pytest.fixture
def pystemmer_2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The Stemmer module as PyStemmer 2.2 has it: algorithms() without five languages, and
    Stemmer("polish") raising KeyError("Stemming algorithm 'polish' not found")."""
    real_algorithms, real_stemmer = Stemmer.algorithms, Stemmer.Stemmer

    def algorithms() -> list[str]:
        return [a for a in real_algorithms() if a not in LACKING]

    def stemmer(name: str, *args: object) -> object:
        if name in LACKING:
            raise KeyError(f"Stemming algorithm '{name}' not found")
        return real_stemmer(name, *args)

    monkeypatch.setattr(Stemmer, "algorithms", algorithms)
    monkeypatch.setattr(Stemmer, "Stemmer", stemmer)
    _clear()
    yield
    _clear()


@pytest.mark.usefixtures("pystemmer_2")
def test_a_polish_word_is_tokenized_unstemmed_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hybrid_rag.lang.analyzers"):
        first = Tokenizer.for_settings(BM25Settings()).tokenize("dvořák")
        again = Tokenizer.for_settings(BM25Settings()).tokenize("Dvořák", "pl")
        czech = Tokenizer.for_settings(BM25Settings()).tokenize("dvořákovi", "cs")
    assert first == ["dvořák"] and again == ["dvořák"] and czech == ["dvořákovi"]
    warned = [r.getMessage() for r in caplog.records if "stemmer" in r.getMessage()]
    assert len([m for m in warned if "'polish'" in m]) == 1, warned
    assert len([m for m in warned if "'czech'" in m]) == 1, warned


@pytest.mark.usefixtures("pystemmer_2")
def test_languages_pystemmer_2_has_are_still_stemmed() -> None:
    tok = Tokenizer.for_settings(BM25Settings())
    assert tok.tokenize("Как сбросить пароли пользователей", "ru") == ["сброс", "парол", "пользовател"]


def test_the_tokenizers_identity_changes_when_a_stemmer_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear()
    full = Tokenizer.for_settings(BM25Settings()).cache_key()
    real = Stemmer.algorithms
    monkeypatch.setattr(Stemmer, "algorithms", lambda: [a for a in real() if a != "polish"])
    _clear()
    try:
        assert analyzers.missing_stemmers() == ("polish",)
        assert Tokenizer.for_settings(BM25Settings()).cache_key() != full
    finally:
        _clear()
    monkeypatch.undo()
    assert Tokenizer.for_settings(BM25Settings()).cache_key() == full


def test_with_every_stemmer_present_the_table_digest_is_that_of_before() -> None:
    import hashlib

    _clear()
    table = analyzers.LANGUAGES
    rows = sorted((c, s.stemmer or "", s.stop_words or "", s.segmenter) for c, s in table.items())
    assert analyzers.table_digest() == hashlib.sha256(repr(rows).encode()).hexdigest()[:12]
