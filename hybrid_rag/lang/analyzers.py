"""Each language's analysis of words into search terms: one analyzer, configured by a table.

As Lucene's and Elasticsearch's language analyzers are one chain (tokenize -> lowercase -> stop
-> stem) configured by name, :data:`LANGUAGES` maps an ISO 639-1 code to its Snowball stemmer
(PyStemmer's algorithm name), its stop words (spaCy's ``spacy/lang/<xx>/stop_words.py``, data
files read without importing spaCy) and the segmenter of the scripts it writes without spaces.
:class:`Analyzer` reads one row; nothing else knows a language by name.

* English and undetermined text (``und``: code, a few words, a language not in the table) keep
  the engine's base analysis, the ``bm25.*`` settings (spaCy's English stop words, no stemmer
  by default): English figures are those of before, and code analyses as it always did.
  Undetermined text is never stemmed.
* Runs of a script written without spaces (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar) become
  overlapping character bigrams in every analyzer, as Lucene's ``CJKBigramFilter`` does (a lone
  character stays a unigram), so Chinese in an English chunk is searchable too.

>>> Analyzer(LANGUAGES["ru"]).terms("Паролями")
('парол',)
>>> Analyzer(NEUTRAL).terms("数据库")
('数据', '据库')
"""

from __future__ import annotations

import importlib.util
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from hybrid_rag.lang.identifiers import split_identifier
from hybrid_rag.lang.normalize import fold_word

Segmenter = Literal["bigrams"]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LanguageSpec:
    """One row of the table: how a language's words become terms."""

    stemmer: str | None = None  # a PyStemmer (Snowball) algorithm name; None: no stemming
    stop_words: str | None = None  # the spaCy language whose STOP_WORDS are dropped; None: none
    segmenter: Segmenter | None = "bigrams"  # scripts without spaces: character bigrams; None: one word


def _row(stemmer: str | None, stop_words: str | None) -> LanguageSpec:
    return LanguageSpec(stemmer=stemmer, stop_words=stop_words)


# code: (Snowball stemmer, spaCy stop words). Every PyStemmer language with an ISO 639-1 code,
# then the languages spaCy has stop words for but Snowball no stemmer. Chinese, Japanese and
# Korean have no stop words here: their terms are bigrams, which spaCy's word lists do not match.
LANGUAGES: Mapping[str, LanguageSpec] = {
    "ar": _row("arabic", "ar"),
    "hy": _row("armenian", "hy"),
    "eu": _row("basque", "eu"),
    "ca": _row("catalan", "ca"),
    "cs": _row("czech", "cs"),
    "da": _row("danish", "da"),
    "nl": _row("dutch", "nl"),
    "en": _row("english", "en"),  # the base analysis replaces this row (see the module docstring)
    "eo": _row("esperanto", None),
    "et": _row("estonian", "et"),
    "fi": _row("finnish", "fi"),
    "fr": _row("french", "fr"),
    "de": _row("german", "de"),
    "el": _row("greek", "el"),
    "hi": _row("hindi", "hi"),
    "hu": _row("hungarian", "hu"),
    "id": _row("indonesian", "id"),
    "ga": _row("irish", "ga"),
    "it": _row("italian", "it"),
    "lt": _row("lithuanian", "lt"),
    "ne": _row("nepali", "ne"),
    "no": _row("norwegian", "nb"),
    "nb": _row("norwegian", "nb"),
    "nn": _row("norwegian", "nb"),
    "fa": _row("persian", "fa"),
    "pl": _row("polish", "pl"),
    "pt": _row("portuguese", "pt"),
    "ro": _row("romanian", "ro"),
    "ru": _row("russian", "ru"),
    "sr": _row("serbian", "sr"),
    "st": _row("sesotho", None),
    "es": _row("spanish", "es"),
    "sv": _row("swedish", "sv"),
    "ta": _row("tamil", "ta"),
    "tr": _row("turkish", "tr"),
    "yi": _row("yiddish", None),
    "af": _row(None, "af"),
    "bg": _row(None, "bg"),
    "bn": _row(None, "bn"),
    "gu": _row(None, "gu"),
    "he": _row(None, "he"),
    "hr": _row(None, "hr"),
    "is": _row(None, "is"),
    "kn": _row(None, "kn"),
    "lv": _row(None, "lv"),
    "mk": _row(None, "mk"),
    "ml": _row(None, "ml"),
    "mr": _row(None, "mr"),
    "ms": _row(None, "ms"),
    "sk": _row(None, "sk"),
    "sl": _row(None, "sl"),
    "sq": _row(None, "sq"),
    "te": _row(None, "te"),
    "th": _row(None, None),
    "tl": _row(None, "tl"),
    "uk": _row(None, "uk"),
    "ur": _row(None, "ur"),
    # vi: spaCy's Vietnamese list cost xquad_vi .948 -> .941 MRR@10 (RESULTS.md#bm25-per-language)
    "vi": _row(None, None),
    "zh": _row(None, None),
    "ja": _row(None, None),
    "ko": _row(None, None),
}

NEUTRAL = LanguageSpec()
"""Language-neutral analysis: lowercase, words and identifier parts, bigrams, no stop words,
no stemming. The tokenizer gives undetermined text its base stop-word list on top."""

# Scripts written without spaces between words (Unicode blocks): Han (with extensions and
# compatibility ideographs), Hiragana, Katakana, Hangul syllables, Thai, Lao, Myanmar, Khmer.
_UNSPACED = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\U00020000-\U0002ffff"
)
_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]+")
_HAS_WORD_CHAR = re.compile(r"\w")


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a run; a single character is its own term.

    >>> bigrams("数据库")
    ['数据', '据库']
    """
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def has_unspaced_script(text: str) -> bool:
    """Whether ``text`` holds a character of a script written without spaces."""
    return _UNSPACED_RUN.search(text) is not None


@cache
def spacy_stop_words(lang: str) -> frozenset[str]:
    """spaCy's ``STOP_WORDS`` for ``lang`` (a folder of ``spacy/lang``), read from the data file
    without importing spaCy (whose import costs seconds); empty when there is none."""
    spec = importlib.util.find_spec("spacy")
    if spec is None or spec.origin is None:
        return frozenset()
    path = Path(spec.origin).parent / "lang" / lang / "stop_words.py"
    if not path.is_file():
        return frozenset()
    file_spec = importlib.util.spec_from_file_location(f"_hybrid_rag_spacy_{lang}_stop_words", path)
    if file_spec is None or file_spec.loader is None:
        return frozenset()
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return frozenset(word.lower() for word in module.STOP_WORDS)


def snowball_stemmer(algorithm: str) -> Any:
    """A new PyStemmer stemmer for ``algorithm`` (one per analyzer: they are not thread-safe), or
    None when the installed PyStemmer lacks it (2.x has no Polish, Czech, Estonian, Persian,
    Esperanto or Sesotho, and llama-index-retrievers-bm25 pins ``PyStemmer<3``): that
    language's words are then left unstemmed, said once per process."""
    import Stemmer

    if algorithm in missing_stemmers():
        _warn_missing(algorithm)
        return None
    return Stemmer.Stemmer(algorithm)


@cache
def _warn_missing(algorithm: str) -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("PyStemmer")
    except PackageNotFoundError:
        installed = "?"
    log.warning(
        "PyStemmer %s has no %r stemmer: those words are indexed and searched unstemmed "
        "(PyStemmer >= 3 has it)",
        installed,
        algorithm,
    )


@cache
def missing_stemmers() -> tuple[str, ...]:
    """The table's stemmers the installed PyStemmer lacks (none with PyStemmer >= 3)."""
    import Stemmer

    available = set(Stemmer.algorithms())
    return tuple(sorted({s.stemmer for s in LANGUAGES.values() if s.stemmer} - available))


class Analyzer:
    """One raw token (a word, an identifier, a run of Chinese) to its terms, by one table row.

    ``extra_stop_words`` are dropped too (the base list of the tokenizer for undetermined text).
    Cheap to build; the stemmer loads on first use. Not thread-safe: a tokenizer owns its analyzers.
    """

    def __init__(
        self,
        spec: LanguageSpec,
        *,
        split_identifiers: bool = True,
        extra_stop_words: frozenset[str] = frozenset(),
        use_stop_words: bool = True,
    ) -> None:
        self.spec = spec
        self.split_identifiers = split_identifiers
        self._fold_lang = "tr" if spec.stemmer == "turkish" else None  # dotted and dotless I
        own = spacy_stop_words(spec.stop_words) if spec.stop_words and use_stop_words else frozenset()
        # folded as the words they are compared with are (Greek's final sigma, Turkish I's)
        self._stop = extra_stop_words | {fold_word(w, self._fold_lang) for w in own}
        self._stemmer: Any = None

    def _stem(self, words: list[str]) -> list[str]:
        if self.spec.stemmer is None or not words:
            return words
        if self._stemmer is None:
            self._stemmer = snowball_stemmer(self.spec.stemmer) or False
        if self._stemmer is False:  # the installed PyStemmer lacks this language's algorithm
            return words
        return list(self._stemmer.stemWords(words))

    def terms(self, raw: str) -> tuple[str, ...]:
        """The terms of one raw token, in order: the lowercased word and (two or more) identifier
        parts without stop words, stemmed; runs of unspaced scripts as bigrams."""
        if not _HAS_WORD_CHAR.search(raw):
            return ()
        if self.spec.segmenter is not None and has_unspaced_script(raw):
            return tuple(self._segmented(raw))
        candidates = [fold_word(raw, self._fold_lang)]
        if self.split_identifiers:
            parts = split_identifier(raw)
            if len(parts) > 1:
                candidates.extend(fold_word(part, self._fold_lang) for part in parts)
        return tuple(self._stem([term for term in candidates if term not in self._stop]))

    def _segmented(self, raw: str) -> list[str]:
        """A token mixing scripts: each unspaced run as bigrams, what is between as words."""
        out: list[str] = []
        start = 0
        for match in _UNSPACED_RUN.finditer(raw):
            out.extend(self.terms(raw[start : match.start()]) if match.start() > start else ())
            out.extend(bigrams(match.group()))
            start = match.end()
        if start < len(raw):
            out.extend(self.terms(raw[start:]))
        return out


def table_digest() -> str:
    """A short digest of :data:`LANGUAGES`: part of the tokenizer's identity in index manifests
    and the term cache, so a change of the table is a rebuild, not a silent mismatch."""
    import hashlib

    missing = set(missing_stemmers())  # other terms: an index built with them is rebuilt, not mixed
    rows = sorted(
        (code, "" if s.stemmer in missing else s.stemmer or "", s.stop_words or "", s.segmenter)
        for code, s in LANGUAGES.items()
    )
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:12]
