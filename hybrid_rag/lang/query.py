"""A query's language: the caller's (``--lang``, ``lang=``) when given, else detected.

The override travels as a context variable set by the retriever around one query, so every
stage that analyses the query (BM25, its expansion, the context, the self-check) reads the same
language without each signature carrying it.

>>> with language_override("pt"):
...     query_language("reset password").code
'pt'
"""

from __future__ import annotations

from collections.abc import Iterator
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


__all__ = ["UNDETERMINED", "language_override", "normalize_code", "overridden", "query_language"]
