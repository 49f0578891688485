"""The Python port of spaCy's tokenizer cuts every text into exactly the tokens spaCy does, over
the rules saved from spaCy (so a query's BM25 terms do not depend on whether spaCy was imported),
and a missing, corrupt or other version's rules file means "use spaCy", never other tokens."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_rag.lang import affix_tokenizer
from hybrid_rag.lang.affix_tokenizer import AffixTokenizer
from hybrid_rag.lazy_imports import hidden_modules

ROOT = Path(__file__).resolve().parents[2]
PIECES = [
    *"abcXYZé019 .,;:!?'\"()[]{}<>-_/\\@#$%^&*+=~`|\n\t…–—’“”",
    "n't", "'s", "'ll", ":)", ":-)", "e.g.", "i.e.", "U.S.", "Mr.", "a.m.", "Jan.", "vs.", "A.",
    "http://x.org/a?b=c", "www.foo.com", "don't", "can't", "'em", "o'clock", "3.5", "1,000",
    "cm", "km", "$5", "10%", "^_^", "<3", "...", "--", "''", "``", "self.get_file(x)", "  ",
]  # fmt: skip


@pytest.fixture(scope="module")
def spacy_tokenizer():
    with hidden_modules("torch"):  # thinc's probe, hidden as the engine hides it
        spacy = pytest.importorskip("spacy")
    return spacy.blank("en").tokenizer


@pytest.fixture(scope="module")
def port(spacy_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> AffixTokenizer:
    cache = tmp_path_factory.mktemp("models")
    os.environ["HYBRID_RAG_MODEL_CACHE"] = str(cache)
    try:
        version = affix_tokenizer.spacy_version()
        assert version is not None
        affix_tokenizer.save_rules(spacy_tokenizer, version)
        loaded = affix_tokenizer.load(version)
    finally:
        del os.environ["HYBRID_RAG_MODEL_CACHE"]
    assert loaded is not None
    return loaded


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
def test_any_text_is_cut_as_spacy_cuts_it(spacy_tokenizer, port: AffixTokenizer, text: str) -> None:
    assert port.tokens(text) == [t.text for t in spacy_tokenizer(text)]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_unicode_is_cut_as_spacy_cuts_it(spacy_tokenizer, port: AffixTokenizer, text: str) -> None:
    assert port.tokens(text) == [t.text for t in spacy_tokenizer(text)]


def test_this_repository_and_the_judged_queries_are_cut_as_spacy_cuts_them(spacy_tokenizer, port) -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "hybrid_rag").rglob("*.py"))]
    datasets = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
    for queries in sorted(datasets.glob("*/queries.jsonl")):
        texts += [json.loads(line)["text"] for line in queries.read_text(encoding="utf-8").splitlines()]
    differ = [text[:80] for text in texts if port.tokens(text) != [t.text for t in spacy_tokenizer(text)]]
    assert texts and not differ


def test_rules_of_another_spacy_version_or_a_corrupt_file_are_not_used(
    spacy_tokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_MODEL_CACHE", str(tmp_path))
    assert affix_tokenizer.load("3.8.18-test") is None  # nothing saved yet
    affix_tokenizer.save_rules(spacy_tokenizer, "3.8.18-test")
    assert affix_tokenizer.load("3.8.18-test") is not None
    saved = affix_tokenizer.rules_path("3.8.18-test")
    rules = json.loads(saved.read_text())
    saved.write_text(json.dumps({**rules, "spacy": "3.7.0"}))
    assert affix_tokenizer.load("3.8.18-test") is None
    saved.write_text('{"format": 1, "spacy": "3.8.18-test", "pref')
    assert affix_tokenizer.load("3.8.18-test") is None
