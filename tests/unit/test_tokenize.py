"""The BM25 tokenizer: identifier splitting, stop words, stemming, both tokenizer kinds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hybrid_rag.lang.identifiers import split_identifier
from hybrid_rag.lang.tokenize import TOKENIZER_VERSION, Tokenizer, spacy_english_stop_words


@pytest.mark.parametrize(
    ("token", "parts"),
    [
        ("getFileName", ["get", "file", "name"]),
        ("get_file_name", ["get", "file", "name"]),
        ("HTTPServer2", ["http", "server", "2"]),
        ("XMLHttpRequest", ["xml", "http", "request"]),
        ("self.get_file_name", ["self", "get", "file", "name"]),
        ("__init__", ["init"]),
        ("v2Beta", ["v", "2", "beta"]),
        ("caféNoir", ["café", "noir"]),
        ("ABC", ["abc"]),
        ("plain", ["plain"]),
        ("", []),
    ],
)
def test_split_identifier(token: str, parts: list[str]) -> None:
    assert split_identifier(token) == parts


def test_regex_lowercases_drops_punctuation_and_splits_identifiers() -> None:
    tok = Tokenizer(kind="regex", stopwords="none", stemmer="none", split_identifiers=True)
    assert tok.tokenize("Call getFileName(path); -> OK!") == [
        "call",
        "getfilename",
        "get",
        "file",
        "name",
        "path",
        "ok",
    ]


def test_split_identifiers_off_keeps_whole_tokens() -> None:
    tok = Tokenizer(kind="regex", stopwords="none", split_identifiers=False)
    assert tok.tokenize("getFileName get_file_name") == ["getfilename", "get_file_name"]


def test_stop_words_are_spacys_and_apply_to_identifier_parts() -> None:
    tok = Tokenizer(kind="regex", stopwords="spacy", split_identifiers=True)
    # spaCy's list holds "the", "get" and "name"; the whole identifier is not a stop word
    assert tok.tokenize("The getFileName of the file") == ["getfilename", "file", "file"]
    assert Tokenizer(kind="regex", stopwords="none").tokenize("the") == ["the"]


def test_stop_words_are_read_without_importing_spacy() -> None:
    from spacy.lang.en.stop_words import STOP_WORDS

    assert spacy_english_stop_words() == frozenset(STOP_WORDS)
    assert len(spacy_english_stop_words()) > 300


def test_constructor_is_cheap_and_regex_never_imports_spacy() -> None:
    code = (
        "import sys\n"
        "from hybrid_rag.lang.tokenize import Tokenizer\n"
        "Tokenizer(kind='spacy', stemmer='english')\n"
        "assert 'spacy' not in sys.modules and 'Stemmer' not in sys.modules\n"
        "print(Tokenizer(kind='regex', stopwords='spacy').tokenize('the files'))\n"
        "assert 'spacy' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['files']"


def test_english_stemmer_applies_to_words_and_parts() -> None:
    tok = Tokenizer(kind="regex", stopwords="none", stemmer="english", split_identifiers=True)
    assert tok.tokenize("running files") == ["run", "file"]
    assert tok.tokenize("loadingFiles") == ["loadingfil", "load", "file"]
    assert tok.tokenize("running files") == ["run", "file"]  # second call comes from the cache


def test_spacy_tokenizer() -> None:
    tok = Tokenizer(kind="spacy", stopwords="spacy", stemmer="none", split_identifiers=True)
    terms = tok.tokenize('It\'s self.get_file_name() -- "quoted" HTTPServer2, e.g. café!')
    assert terms == [
        "self.get_file_name", "self", "file",
        "quoted",
        "httpserver2", "http", "server", "2",
        "e.g.", "e", "g",
        "café",
    ]  # fmt: skip


def test_tokenize_many_equals_tokenize_for_both_kinds() -> None:
    texts = ["Alpha beta, GAMMA.", "", "   ", "snake_case and camelCase", "¿Qué tal? 3.14 x+=1"]
    for kind in ("regex", "spacy"):
        tok = Tokenizer(kind=kind, stopwords="spacy", stemmer="english")
        assert tok.tokenize_many(texts) == [tok.tokenize(t) for t in texts]
        assert tok.tokenize_many([]) == []


@pytest.mark.parametrize("kind", ["regex", "spacy"])
def test_empty_and_punctuation_only_texts_give_no_terms(kind: str) -> None:
    tok = Tokenizer(kind=kind)  # type: ignore[arg-type]
    assert tok.tokenize("") == []
    assert tok.tokenize(" \n\t ") == []
    assert tok.tokenize("... -> (!) ;") == []


def test_params_record_what_decides_the_terms() -> None:
    tok = Tokenizer(kind="regex", stopwords="none", stemmer="english", split_identifiers=False)
    assert tok.params() == {
        "kind": "regex",
        "stopwords": "none",
        "stemmer": "english",
        "split_identifiers": False,
        "tokenizer_version": TOKENIZER_VERSION,
    }


def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="valid: spacy, regex"):
        Tokenizer(kind="nltk")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="valid: none, english"):
        Tokenizer(stemmer="porter")  # type: ignore[arg-type]


def test_lucene_stop_list_keeps_code_words_that_spacys_list_drops():
    spacy_tok = Tokenizer(kind="regex", stopwords="spacy", split_identifiers=True)
    lucene_tok = Tokenizer(kind="regex", stopwords="lucene", split_identifiers=True)
    assert spacy_tok.tokenize("get the file name") == ["file"]
    assert lucene_tok.tokenize("get the file name") == ["get", "file", "name"]
    with pytest.raises(ValueError, match="valid: spacy, lucene, none"):
        Tokenizer(stopwords="klingon")  # type: ignore[arg-type]
