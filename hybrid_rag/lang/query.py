"""A query's language: the caller's (``--lang``, ``lang=``) when given, else detected.

It is decided once, when the typed query is built (``request.Query.asked``), and handed to every
stage that analyses the question (BM25, its expansion, the context, the self-check) as an
:class:`Asked` or its code: no stage asks for it again. The question's terms travel with it too:
each analyzer a stage reads it with (BM25's tokenizer, the content terms, the identifier tokens)
runs once a question and text, kept on the :class:`Asked` (:meth:`Asked.analysed`).

>>> Asked.of("reset password", "pt").code, query_language("reset password", "PT").code
('pt', 'pt')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

from hybrid_rag.errors import InputError
from hybrid_rag.lang.codes import KNOWN
from hybrid_rag.lang.detect import UNDETERMINED, Language, detect_language

T = TypeVar("T")


def normalize_code(code: str) -> str:
    """``"RU"`` -> ``"ru"``; an empty code is :data:`UNDETERMINED`. InputError naming the valid
    codes for anything that is not one (``lang/codes.py``: ISO 639-1, the detector's, ``und``)."""
    value = code.strip().lower()
    if not value:
        return UNDETERMINED
    if value not in KNOWN:
        from hybrid_rag.lang.analyzers import LANGUAGES

        raise InputError(
            f"{code!r} is not a language code: use ISO 639-1 (or und); these have their own BM25 "
            f"analyzer: {', '.join(sorted(LANGUAGES))}"
        )
    return value


def query_language(text: str, lang: str | None = None) -> Language:
    """The language ``text`` is read in: ``lang`` (the caller's, confidence 1.0; InputError for
    what is not a code) when given, else detected (remembered per text)."""
    return Language(normalize_code(lang), 1.0) if lang else _detected(text)


@dataclass(frozen=True)
class Asked:
    """A question's language, decided once: ``text`` the question, ``language`` the caller's
    (``given``) or the detected one. The stages read the question in :attr:`code`, and a text
    made from it (an expansion's query, a variant, a self-check retry) in :meth:`code_of`."""

    text: str
    language: Language
    given: bool = False
    # (analyzer, text) -> its analysis of the text: what the stages read the question with, once
    _analyses: dict[tuple[Hashable, str], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    @classmethod
    def of(cls, text: str, lang: str | None = None) -> Asked:
        """``text`` read in ``lang`` when given (InputError for what is not a code), else detected."""
        return cls(text, query_language(text, lang), bool(lang))

    @property
    def code(self) -> str:
        return self.language.code

    def code_of(self, text: str) -> str:
        """The language ``text`` is read in: the caller's when given, the question's for the
        question itself, else the text's own (detected: a rewrite may read otherwise).

        >>> Asked.of("reset password", "pt").code_of("другой текст")
        'pt'
        """
        return self.code if self.given or text == self.text else _detected(text).code

    def analysed(self, analyzer: Hashable, analyse: Callable[[str], T], text: str | None = None) -> T:
        """``analyse(text)`` (the question's own text when None) computed once for this question
        per ``analyzer`` (a key naming the analysis and whatever decides its answer: a tokenizer's
        cache key, the index's languages) and text, then handed back as kept. The analysis must be
        a pure function of its key and text and give an immutable value (a tuple, a frozenset):
        every stage that asks shares it.

        >>> asked = Asked.of("reset password", "en")
        >>> asked.analysed("words", lambda text: tuple(text.split()))
        ('reset', 'password')
        """
        key = (analyzer, self.text if text is None else text)
        try:
            return self._analyses[key]  # type: ignore[no-any-return]
        except KeyError:
            return self._analyses.setdefault(key, analyse(key[1]))  # type: ignore[no-any-return]


@lru_cache(maxsize=1024)
def _detected(text: str) -> Language:
    return detect_language(text)


_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af\u1100-\u11ff]")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")


def script_language(text: str) -> str | None:
    """The language a question's script names when its letters are mostly of one written only
    by it: kana ``ja``, Hangul ``ko``, Han without kana ``zh``; None for any other script.

    >>> script_language("长城有多长"), script_language("東京はどこ"), script_language("hello")
    ('zh', 'ja', None)
    """
    letters = sum(ch.isalpha() for ch in text)
    if not letters:
        return None
    if _KANA.search(text):
        return "ja"
    for code, pattern in (("ko", _HANGUL), ("zh", _HAN)):
        if 2 * len(pattern.findall(text)) >= letters:
            return code
    return None


def index_reading(
    text: str, code: str, index_languages: Mapping[str, int], min_share: float, *, given: bool = False
) -> str:
    """The language question ``text`` (read as ``code``) counts as against an index holding
    ``index_languages`` (chunks per language): ``code`` when the index holds at least
    ``min_share`` of its chunks in it; else the language its script names when the index holds
    that one (a short Han question that fastText reads as Japanese, Wu or ``und`` over a Chinese
    index is Chinese); else ``code``. A language the caller gave (``--lang``: ``given``) is kept.

    >>> index_reading("长城多长", "wuu", {"zh": 120}, 0.05), index_reading("长城多长", "wuu", {"en": 9}, 0.05)
    ('zh', 'wuu')
    """
    total = sum(index_languages.values())
    if given or not total or index_languages.get(code, 0) >= min_share * total:
        return code
    by_script = script_language(text)
    if by_script is not None and index_languages.get(by_script, 0) >= min_share * total:
        return by_script
    return code


__all__ = [
    "UNDETERMINED",
    "Asked",
    "index_reading",
    "normalize_code",
    "query_language",
    "script_language",
]
