"""Text to BM25 terms: the one tokenizer that both the index and the queries go through.

A raw token becomes zero or more terms, in this order:

1. tokens without a single word character (punctuation, operators, whitespace) are dropped;
2. the lowercased token, unless it is a stop word (spaCy's English ``STOP_WORDS``);
3. with ``split_identifiers``, the lowercased parts of an identifier, when there are two or
   more: ``getFileName`` -> ``get, file, name``; ``HTTPServer2`` -> ``http, server, 2``;
   ``self.get_file_name`` -> ``self, get, file, name`` (stop words dropped here too);
4. with ``stemmer="english"``, every term stemmed by Snowball (PyStemmer).

Before all this every text, document or question, is Unicode-normalised (``lang/normalize.py``:
soft hyphens and zero-width characters removed, NFKC) and "lowercased" is case folding (Turkish
I's by language); ASCII text is untouched, so its terms are those of before.

With ``languages`` (``bm25.languages``, on by default) each text is analysed in its own language
(``hybrid_rag/lang/analyzers.py``: one analyzer, a table of Snowball stemmers, stop words and
segmenters): a chunk in the language stored for it at ingest, a query in its detected language
(or the caller's ``lang``). English and undetermined text keep steps 1-4 above; runs of scripts
written without spaces (Chinese, Japanese, Thai) become character bigrams in every language.

Each distinct raw token is processed once and cached, so a corpus costs about one
dictionary lookup per token after the first few thousand documents.

>>> Tokenizer(kind="regex", stopwords=False).tokenize("getFileName(path)")
['getfilename', 'get', 'file', 'name', 'path']
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hybrid_rag.lang.normalize import normalize_text
from hybrid_rag.types import fields_of

TokenizerKind = Literal["spacy", "regex"]
StemmerName = Literal["none", "english"]

# Bump when the terms produced for the same text change: BM25 manifests record it, and an
# index built by another version is refused at load instead of silently matching badly.
if TYPE_CHECKING:
    from hybrid_rag.lang.affix_tokenizer import AffixTokenizer
    from hybrid_rag.lang.query import Asked
    from hybrid_rag.settings import BM25Settings
    from hybrid_rag.types import Chunk

TOKENIZER_VERSION = 3  # 2: each text analysed in its language (bm25.languages); 3: NFKC, case folding

_WORD = re.compile(r"\w+")
_SPACY_BATCH = 256
_PORT_MAX_TEXTS = 16  # up to this many texts (a query, its expansions) skip importing spaCy
_CACHE_LIMIT = 500_000  # distinct raw tokens kept; the cache is cleared when it grows past this
# a query is read in its language where at least this share of the indexed chunks is in it; else
# (and when undetermined) in each language that holds this share: a short query detected as French
# over an English index with two French docstrings stays English
MIN_SHARE = 0.05


@lru_cache(maxsize=1)
def spacy_english_stop_words() -> frozenset[str]:
    """spaCy's English ``STOP_WORDS`` (326 words), read without importing spaCy.

    ``import spacy`` pulls in thinc and torch (about 2.5 s); the stop-word list is a plain data
    module, so it is loaded on its own from the installed package when that is possible.
    """
    spec = importlib.util.find_spec("spacy")
    path = Path(spec.origin).parent / "lang" / "en" / "stop_words.py" if spec and spec.origin else None
    if path is not None and path.is_file():
        file_spec = importlib.util.spec_from_file_location("_hybrid_rag_spacy_en_stop_words", path)
        if file_spec is not None and file_spec.loader is not None:
            module = importlib.util.module_from_spec(file_spec)
            file_spec.loader.exec_module(module)
            return frozenset(module.STOP_WORDS)
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


StopWords = Literal["spacy", "lucene", "none"]

# Lucene's classic English stop set (StopAnalyzer.ENGLISH_STOP_WORDS_SET, 33 words; also bm25s's
# STOPWORDS_EN): function words only, so code words such as get, name, call, first stay searchable.
LUCENE_STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)


def stop_words(name: StopWords | bool) -> frozenset[str]:
    """The stop-word set by name (``True`` means spaCy's list, ``False`` none)."""
    if name is True or name == "spacy":
        return spacy_english_stop_words()
    if name == "lucene":
        return LUCENE_STOP_WORDS
    if name is False or name == "none":
        return frozenset()
    raise ValueError(f"unknown stop-word list {name!r}; valid: spacy, lucene, none")


class Tokenizer:
    """Turns text into BM25 terms; cheap to build (spaCy and the stemmer load on first use).

    ``kind="spacy"`` uses the rule-based tokenizer of ``spacy.blank("en")`` (no model, no
    pipeline components, works offline); ``kind="regex"`` takes ``\\w+`` runs and is several
    times faster. Both lowercase and use the same stop-word list and stemmer.
    """

    def __init__(
        self,
        kind: TokenizerKind = "spacy",
        stopwords: StopWords | bool = "spacy",
        stemmer: StemmerName = "none",
        split_identifiers: bool = True,
        languages: bool = False,
    ) -> None:
        if kind not in ("spacy", "regex"):
            raise ValueError(f"unknown tokenizer kind {kind!r}; valid: spacy, regex")
        if stemmer not in ("none", "english"):
            raise ValueError(f"unknown stemmer {stemmer!r}; valid: none, english")
        self.kind: TokenizerKind = kind
        self.stopwords: StopWords = {True: "spacy", False: "none"}.get(stopwords, stopwords)  # type: ignore[arg-type,assignment]
        if self.stopwords not in ("spacy", "lucene", "none"):
            raise ValueError(f"unknown stop-word list {stopwords!r}; valid: spacy, lucene, none")
        self.stemmer: StemmerName = stemmer
        self.split_identifiers = bool(split_identifiers)
        self._spacy_tokenizer: Any = None
        self._stop_words: frozenset[str] | None = None
        self._base: Any = None  # the Analyzer of steps 1-4 (no languages), built with the stop words
        self._cache: dict[str, tuple[str, ...]] = {}
        self.languages = bool(languages)
        self._analyzers: dict[str, Any] = {}  # language code -> Analyzer (with ``languages``)
        self._lang_caches: dict[str, dict[str, tuple[str, ...]]] = {}
        self.index_languages: dict[str, int] = {}  # chunks per language in the index searched

    @classmethod
    def for_settings(cls, bm25: BM25Settings) -> Tokenizer:
        """The tokenizer ``bm25.*`` configures (the index's, and so PRF's and the lexical reranker's)."""
        return cls(bm25.tokenizer, bm25.stopwords, bm25.stemmer, bm25.split_identifiers, bm25.languages)

    def params(self) -> dict[str, object]:
        """What decides the terms, for index manifests."""
        return {
            **fields_of(self, "kind", "stopwords", "stemmer", "split_identifiers"),
            "tokenizer_version": TOKENIZER_VERSION,
            **({"languages": _table_digest()} if self.languages else {}),
        }

    def cache_key(self) -> str:
        """A short digest of :meth:`params`: the key of this tokenizer's terms in the store's cache."""
        return hashlib.sha256(json.dumps(self.params(), sort_keys=True).encode()).hexdigest()[:16]

    def tokenize(self, text: str, lang: str | None = None) -> list[str]:
        """The terms of one text, in order (duplicates kept: BM25 counts them)."""
        return self.tokenize_many([text], None if lang is None else [lang])[0]

    def tokenize_many(self, texts: Sequence[str], langs: Sequence[str] | None = None) -> list[list[str]]:
        """The terms of many texts; batched through spaCy's ``pipe`` for speed. With
        ``languages``, each text is analysed in ``langs[i]`` (detected when ``langs`` is None)."""
        self._ensure_loaded()
        texts = [normalize_text(text) for text in texts]  # documents and questions alike
        if len(self._cache) > _CACHE_LIMIT:
            self._cache.clear()
        if not self.languages:
            return [self._terms(raw_tokens) for raw_tokens in self._raw_tokens(texts)]
        if langs is None:
            from hybrid_rag.lang.detect import detect_language

            langs = [detect_language(text).code for text in texts]
        if len(langs) != len(texts):
            raise ValueError(f"{len(langs)} languages for {len(texts)} texts")
        raws = self._raw_tokens(texts)
        return [self._lang_terms(raw_tokens, lang) for raw_tokens, lang in zip(raws, langs, strict=True)]

    def tokenize_query(self, text: str, lang: str | None = None) -> list[str]:
        """A query's terms: analysed in ``lang`` (the question's, decided once: ``lang/query.py``),
        else in its detected language. A query whose language is undetermined, or one less than
        :data:`MIN_SHARE` of the indexed chunks is written in (:attr:`index_languages`, when
        known), is read in each language holding that share: the first's terms, then the
        others' new terms, then the language-neutral analysis's new ones. Without ``languages``:
        :meth:`tokenize`."""
        if not self.languages:
            return self.tokenize(text)
        from hybrid_rag.lang.detect import UNDETERMINED
        from hybrid_rag.lang.query import query_language

        code = lang or query_language(text).code
        present = self.index_languages
        total = sum(present.values())
        if code != UNDETERMINED and (not present or present.get(code, 0) >= MIN_SHARE * total):
            return self.tokenize(text, code)
        major = sorted(
            (c for c, n in present.items() if c != UNDETERMINED and n >= MIN_SHARE * total),
            key=lambda c: (-present[c], c),
        )
        out: list[str] = []
        seen: set[str] = set()
        for reading in [*major, UNDETERMINED]:
            terms = self.tokenize(text, reading)
            out.extend(terms if not out else [t for t in terms if t not in seen])
            seen.update(terms)
        return out

    def asked_terms(self, asked: Asked, text: str | None = None) -> tuple[str, ...]:
        """:meth:`tokenize_query` of ``text`` (the question itself when None) read in the language
        ``asked`` gives it, analysed once a question: kept on ``asked`` under this tokenizer's
        :meth:`cache_key` and the index's languages, so BM25's search, its exact scores, the
        reading check and the expansion share one analysis of the question."""
        text = asked.text if text is None else text
        lang = asked.code_of(text)
        key = ("bm25", self.cache_key(), tuple(sorted(self.index_languages.items())), lang)
        return asked.analysed(key, lambda t: tuple(self.tokenize_query(t, lang)), text)

    def _lang_terms(self, raw_tokens: list[str], lang: str) -> list[str]:
        cache = self._lang_caches.get(lang)
        if cache is None or len(cache) > _CACHE_LIMIT:
            cache = self._lang_caches[lang] = {}
        analyzer = self._analyzer(lang)
        out: list[str] = []
        for raw in raw_tokens:
            terms = cache.get(raw)
            if terms is None:
                terms = cache[raw] = analyzer.terms(raw)
            out.extend(terms)
        return out

    def _analyzer(self, lang: str) -> Any:
        """The analyzer of ``lang``: its table row; English the base (these settings' stop words
        and stemmer); undetermined text and languages not in the table the neutral one with the
        base stop words, unstemmed."""
        analyzer = self._analyzers.get(lang)
        if analyzer is not None:
            return analyzer
        from hybrid_rag.lang.analyzers import LANGUAGES, NEUTRAL, Analyzer, LanguageSpec

        base_stop = self._stop_words or frozenset()
        if lang == "en":
            spec = LanguageSpec(stemmer="english" if self.stemmer == "english" else None)
            analyzer = Analyzer(spec, split_identifiers=self.split_identifiers, extra_stop_words=base_stop)
        elif lang in LANGUAGES:
            analyzer = Analyzer(
                LANGUAGES[lang],
                split_identifiers=self.split_identifiers,
                use_stop_words=self.stopwords != "none",
            )
        else:
            analyzer = Analyzer(NEUTRAL, split_identifiers=self.split_identifiers, extra_stop_words=base_stop)
        self._analyzers[lang] = analyzer
        return analyzer

    def _raw_tokens(self, texts: Sequence[str]) -> Iterable[list[str]]:
        if self.kind == "regex":
            return (_WORD.findall(text) for text in texts)
        if self._spacy_tokenizer is None and len(texts) <= _PORT_MAX_TEXTS:
            port = _saved_spacy_rules()  # a query: spaCy's rules without importing spaCy
            if port is not None:
                return (port.tokens(text) for text in texts)
        self._load_spacy()
        return ([t.text for t in doc] for doc in self._spacy_tokenizer.pipe(texts, batch_size=_SPACY_BATCH))

    def _terms(self, raw_tokens: list[str]) -> list[str]:
        cache = self._cache
        out: list[str] = []
        for raw in raw_tokens:
            terms = cache.get(raw)
            if terms is None:
                terms = cache[raw] = self._base.terms(raw)  # steps 1-4 of the module docstring
            out.extend(terms)
        return out

    def _load_spacy(self) -> None:
        if self._spacy_tokenizer is None:
            from hybrid_rag.lang import affix_tokenizer
            from hybrid_rag.lazy_imports import hidden_modules

            with hidden_modules("torch"):  # thinc imports torch when it can: seconds, and unused here
                import spacy

            self._spacy_tokenizer = spacy.blank("en").tokenizer
            version = affix_tokenizer.spacy_version()
            if version is not None and not affix_tokenizer.rules_path(version).is_file():
                affix_tokenizer.save_rules(self._spacy_tokenizer, version)  # for later queries

    def _ensure_loaded(self) -> None:
        if self._stop_words is None:
            self._stop_words = stop_words(self.stopwords)
        if self._base is None:  # the one chain (lang/analyzers.py), unspaced runs kept whole as before
            from hybrid_rag.lang.analyzers import Analyzer, LanguageSpec

            spec = LanguageSpec(stemmer="english" if self.stemmer == "english" else None, segmenter=None)
            self._base = Analyzer(
                spec, split_identifiers=self.split_identifiers, extra_stop_words=self._stop_words
            )


def _table_digest() -> str:
    from hybrid_rag.lang.analyzers import table_digest

    return table_digest()


@lru_cache(maxsize=1)
def _saved_spacy_rules() -> AffixTokenizer | None:
    """spaCy's English tokenizer as :mod:`affix_tokenizer` runs it from saved rules (same tokens,
    no spaCy import); None until spaCy has been loaded once with this version."""
    from hybrid_rag.lang import affix_tokenizer

    return affix_tokenizer.load()


def content_terms(text: str, lang: str | None = None) -> list[str]:
    """The text's terms in order (duplicates kept): words and identifier parts, no stop words.
    ``lang`` (a language of ``hybrid_rag/lang/analyzers.py``'s table other than English) reads
    them as that language's BM25 analyzer does: its stop words dropped, its stemmer applied,
    unspaced scripts as bigrams, so "пароли" and "пароль" are one term. English, ``und`` and
    None: English stop words, no stemming (as before languages).

    >>> content_terms("Where is parseHttpRequest defined?")
    ['parsehttprequest', 'parse', 'http', 'request', 'defined']
    >>> content_terms("Как сбросить пароли?", "ru")
    ['сброс', 'парол']
    """
    text = normalize_text(text)
    if lang is None or lang in ("en", "und") or not _has_analyzer(lang):
        return [term for token in _WORD.findall(text) for term in _token_terms(token)]
    return [term for token in _WORDISH.findall(text) for term in _lang_token_terms(token, lang)]


_WORDISH = re.compile(r"[\w\u0300-\u036f\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]+")  # with marks


def _has_analyzer(lang: str) -> bool:
    from hybrid_rag.lang.analyzers import LANGUAGES

    return lang in LANGUAGES


@lru_cache(maxsize=100_000)
def _lang_token_terms(token: str, lang: str) -> tuple[str, ...]:
    terms = _content_analyzer(lang).terms(token)
    return tuple(t for t in terms if len(t) > 1 or t.isdigit())


@cache
def _content_analyzer(lang: str) -> Any:
    from hybrid_rag.lang.analyzers import LANGUAGES, Analyzer

    return Analyzer(LANGUAGES[lang])


@lru_cache(maxsize=100_000)
def _token_terms(token: str) -> tuple[str, ...]:
    terms = _content_base().terms(token)
    return tuple(t for t in terms if len(t) > 1 or t.isdigit())


@cache
def _content_base() -> Any:
    """The analyzer of English, undetermined and no language: spaCy's English stop words, no
    stemmer, unspaced runs kept whole (the same chain as BM25's, through ``Analyzer.terms``)."""
    from hybrid_rag.lang.analyzers import Analyzer, LanguageSpec

    return Analyzer(LanguageSpec(segmenter=None), extra_stop_words=spacy_english_stop_words())


def analysis_language(chunk: Chunk) -> str:
    """The language BM25 reads a chunk in: its own for text; ``und`` (the base analysis, as before
    languages) for code, whose identifiers and keywords no natural language's stemmer may touch."""
    from hybrid_rag.types import SourceType

    return "und" if chunk.source_type is SourceType.CODE else chunk.lang
