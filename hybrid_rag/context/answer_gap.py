"""Quotes that cannot answer the question, whatever their scores: a reason, or None.

The confidence (``retrieval/selfcheck.py``) weighs the dense cosine, the share of the question's
words found and the margin; a page on the question's topic scores high on all three even when it
is not the kind of answer asked for. Two cases are caught here, on the lines a context quotes:

* **code asked, prose quoted**: a how-to question that asks for code ("how do I write a function
  that ...", "как написать код для сброса пароля", "código para ...") whose quoted lines hold no
  code that bears on it (a code chunk, a fenced block or a line that reads as a statement, which
  shares a content word with the question or which the dense model vouches for): a page *about*
  the task does not show how it is written, nor does an unrelated function quoted beside it
  (issue 42: such a Russian question got confidence .84);
* **nothing links them**: the quoted lines share no content word with the question, each is in
  a language other than the question's (detected: code and undetermined text never count), and
  the dense model does not vouch for them (its signal, on the model's cosine scale, under
  ``DENSE_VOUCH``). A cross-lingual answer the model reads
  (multilingual-e5, a Russian question over English text) keeps its confidence: there the
  model's cosine is the link.

The builder then caps the context's confidence at ``GAP_CAP`` (under the default threshold) and
shows the reason as a note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hybrid_rag.lang.query import query_language
from hybrid_rag.lang.tokenize import content_terms

GAP_CAP = 0.1  # the confidence of quotes that cannot answer (context.confidence_threshold: 0.25)
DENSE_VOUCH = 0.5  # the dense signal (0 unrelated .. 1 clearly related) that alone links a quote

_CODE_NOUNS = (
    r"code|function|method|class|script|snippet|program|regex|query|"  # en
    r"код\w*|функци\w*|метод\w*|класс\w*|скрипт\w*|программ\w*|"  # ru
    r"c[óo]digo|fun[çc][ãa]o|funci[óo]n|m[ée]todo|classe|clase|"  # pt, es
    r"funktion|methode|klasse|skript|quelltext"  # de
)
_ASKS_FOR_CODE = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(write|writing|implement\w*|code up|example|sample|show)\b.*\b({_CODE_NOUNS})\b",
        r"\b(code|snippet|script|function)\s+(for|to|that|which)\b",
        r"\b(example|sample)\s+code\b|\bcode\s+(example|sample)\b|\bimplement\w*\b",
        rf"\b(написать|напиши\w*|написани\w*|реализова\w*|реализуй\w*|пример\w*)\b.*\b({_CODE_NOUNS})\b",
        r"\bкод\w*\s+(для|чтобы|которы\w*)\b|\bпример\w*\s+кода\b",
        rf"\b(escrever|escreva|escribir|escribe|implementar|exemplo|ejemplo)\b.*\b({_CODE_NOUNS})\b",
        r"\bc[óo]digo\s+(para|que)\b",
        rf"\b(schreiben|schreibe|implementier\w*|beispiel)\b.*\b({_CODE_NOUNS})\b",
        rf"\b({_CODE_NOUNS})\b.*\b(schreiben|implementieren|написать|реализовать|escrever|escribir)\b",
        r"\bcode\s+(für|um)\b|\bcodebeispiel\b",
    )
]
# words that make "code" a number or a label, not a program ("error code 42", "код ошибки")
_NOT_PROGRAM = re.compile(
    r"\b(error|status|exit|return|zip|postal|country|promo|discount)\s+codes?\b|"
    r"\bcodes?\s+(of|for)\s+(the\s+)?(error|status)\b|\bкод\w*\s+(ошибк\w*|ответа|возврата|страны)\b",
    re.IGNORECASE,
)
_CODE_LINE = re.compile(
    r"^\s*(```|~~~|def |class |import |from \S+ import |return\b|function\b|public |private |"
    r"#include|const |let |var |fn |func |package |SELECT\b|\$ )"
    r"|[;{}]\s*$|\w\s*\([^()]*\)\s*(:|\{|;|=>)?\s*$|=>|:=|->",
)


@dataclass(frozen=True)
class Quoted:
    """One quoted chunk: its lines, whether the chunk is code, its natural language, and its dense
    signal (its cosine to the question on the model's scale, 0 unrelated .. 1 clearly related;
    None without a dense score)."""

    text: str
    code: bool
    lang: str = "und"
    dense: float | None = None

    def vouched(self) -> bool:
        return self.dense is not None and self.dense >= DENSE_VOUCH


def asks_for_code(question: str) -> bool:
    """Whether the question asks to be shown code (how to write or implement something).

    >>> asks_for_code("как написать код для сброса пароля пользователя?")
    True
    >>> asks_for_code("how do I write a function that resets a password?")
    True
    >>> asks_for_code("how long is a password reset link valid?")
    False
    >>> asks_for_code("what does error code 42 mean?")
    False
    """
    text = _NOT_PROGRAM.sub(" ", question)
    return any(p.search(text) for p in _ASKS_FOR_CODE)


def holds_code(quoted: Quoted) -> bool:
    """A code chunk, or prose quoting a fenced block or a line that reads as a statement."""
    return quoted.code or any(_CODE_LINE.search(line) for line in quoted.text.splitlines())


def answer_gap(question: str, quotes: Sequence[Quoted], *, lang: str | None = None) -> str | None:
    """Why ``quotes`` cannot answer ``question`` (module docstring), or None; ``lang``: the
    question's language, decided once with the query (None: detected here)."""
    if not quotes:
        return None
    lang = lang or query_language(question).code
    terms = set(content_terms(question, lang))

    def shares(q: Quoted) -> bool:
        return bool(terms & set(content_terms(q.text, lang)))

    if asks_for_code(question) and not any(holds_code(q) and (shares(q) or q.vouched()) for q in quotes):
        return (
            "the question asks for code and the quoted lines hold none that bears on it: they do not show how"
        )
    if not terms or lang == "und":
        return None
    if not any(shares(q) or q.lang in (lang, "und") or q.vouched() for q in quotes):  # und: not known
        langs = ", ".join(sorted({q.lang for q in quotes}))
        return (
            f"the quoted lines ({langs}) share no word and no language with the question ({lang}), "
            "and the dense model does not vouch for them"
        )
    return None
