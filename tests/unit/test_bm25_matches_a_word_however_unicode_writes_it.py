"""BM25 finds the plain word whatever Unicode form the document or the question writes it in:
zero-width characters and soft hyphens inside it, NFD accents against NFC, fullwidth letters,
ligatures, Turkish dotted capital I; and ASCII text's terms are those of before."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.lang.tokenize import Tokenizer, content_terms

FORMS = {
    "zero width space": "pass\u200bword",
    "soft hyphen": "pass\u00adword",
    "word joiner": "pass\u2060word",
    "fullwidth": "ｐａｓｓｗｏｒｄ",
    "fullwidth capitals": "ＰＡＳＳＷＯＲＤ",
}


@pytest.mark.parametrize("languages", [True, False])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_is_the_plain_word(form: str, languages: bool) -> None:
    tokenizer = Tokenizer(languages=languages)
    lang = "en" if languages else None
    plain = tokenizer.tokenize("the password field", lang)
    assert tokenizer.tokenize(f"the {FORMS[form]} field", lang) == plain


@pytest.mark.parametrize(
    ("written", "plain", "lang"),
    [
        ("cafe\u0301", "café", "fr"),  # NFD against NFC
        ("ﬁchier", "fichier", "fr"),  # ligature fi
        ("ﬂour", "flour", "en"),
        ("İstanbul", "istanbul", "tr"),  # Turkish dotted capital I
        ("İstanbul", "istanbul", "en"),  # ... folds to i in other languages too
        ("STRASSE", "straße", "de"),  # case folding: ß = ss
    ],
)
def test_compatibility_and_case_forms_match(written: str, plain: str, lang: str) -> None:
    tokenizer = Tokenizer(languages=True)
    assert tokenizer.tokenize(written, lang) == tokenizer.tokenize(plain, lang)
    assert content_terms(written, lang) == content_terms(plain, lang)


def test_turkish_keeps_its_dotless_i() -> None:
    tokenizer = Tokenizer(languages=True, stopwords="none")
    light = tokenizer.tokenize("ışık", "tr")
    assert tokenizer.tokenize("IŞIK", "tr") == light != tokenizer.tokenize("işik", "tr")


def test_ascii_terms_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The terms of ASCII text are those of the tokenizer without normalisation (lowercasing)."""
    import hybrid_rag.lang.analyzers as analyzers
    import hybrid_rag.lang.tokenize as tokenize

    text = "getFileName(path) returns the HTTPServer2 config_file; Mach 3.5 flow over a WING. I, IP"
    langs = ("en", "tr", "de", "und")
    new = [Tokenizer(languages=True).tokenize(text, lang) for lang in langs]
    new.append(Tokenizer(languages=False).tokenize(text))
    monkeypatch.setattr(tokenize, "normalize_text", lambda t: t)
    monkeypatch.setattr(analyzers, "fold_word", lambda w, lang=None: w.lower())  # the one term chain
    old = [Tokenizer(languages=True).tokenize(text, lang) for lang in langs]
    old.append(Tokenizer(languages=False).tokenize(text))
    assert new == old
    assert "ip" in new[1]  # ASCII capitals in Turkish text stay i (the dotless rule is for non-ASCII words)


def test_a_query_finds_documents_whatever_form_each_uses(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, form in enumerate(sorted(FORMS)):
        (folder / f"d{i}.md").write_text(f"# Note {i}\n\nReset the {FORMS[form]} of an account.\n")
    (folder / "other.md").write_text("# Other\n\nNothing about accounts here.\n")
    engine.ingest([folder])
    for question in ("reset password", "reset ＰＡＳＳ\u00adＷＯＲＤ"):
        found = {Path(c.path).name for c in engine.query(question, mode="bm25", top_k=10).chunks}
        assert {f"d{i}.md" for i in range(len(FORMS))} <= found, question
