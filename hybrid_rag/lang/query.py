"""A query's language: the caller's (``--lang``, ``lang=``) when given, else detected.

The override travels as a context variable set by the retriever around one query, so every
stage that analyses the query (BM25, its expansion, the context, the self-check) reads the same
language without each signature carrying it.

>>> with language_override("pt"):
...     query_language("reset password").code
'pt'
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

from hybrid_rag.errors import InputError
from hybrid_rag.lang.codes import KNOWN
from hybrid_rag.lang.detect import UNDETERMINED, Language, detect_language

_override: ContextVar[str | None] = ContextVar("hybrid_rag_query_language", default=None)


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


@contextmanager
def language_override(code: str | None) -> Iterator[None]:
    """While inside, :func:`query_language` answers ``code``; None changes nothing (an outer
    override stays, else the language is detected)."""
    if not code:
        yield
        return
    token = _override.set(normalize_code(code))
    try:
        yield
    finally:
        _override.reset(token)


def overridden() -> str | None:
    """The language set by :func:`language_override`, if any."""
    return _override.get()


def query_language(text: str) -> Language:
    """The language the query ``text`` is read in: the override (confidence 1.0), else detected."""
    code = _override.get()
    return Language(code, 1.0) if code is not None else _detected(text)


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


def index_reading(text: str, code: str, index_languages: Mapping[str, int], min_share: float) -> str:
    """The language question ``text`` (read as ``code``) counts as against an index holding
    ``index_languages`` (chunks per language): ``code`` when the index holds at least
    ``min_share`` of its chunks in it; else the language its script names when the index holds
    that one (a short Han question that fastText reads as Japanese, Wu or ``und`` over a Chinese
    index is Chinese); else ``code``. A language the caller gave (``--lang``) is kept as given.

    >>> index_reading("长城多长", "wuu", {"zh": 120}, 0.05), index_reading("长城多长", "wuu", {"en": 9}, 0.05)
    ('zh', 'wuu')
    """
    total = sum(index_languages.values())
    if overridden() is not None or not total or index_languages.get(code, 0) >= min_share * total:
        return code
    by_script = script_language(text)
    if by_script is not None and index_languages.get(by_script, 0) >= min_share * total:
        return by_script
    return code


__all__ = [
    "UNDETERMINED",
    "index_reading",
    "language_override",
    "normalize_code",
    "overridden",
    "query_language",
    "script_language",
]
