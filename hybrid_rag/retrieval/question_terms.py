"""The question's terms, analysed once per analyzer the stages need and kept on its ``Asked``
(``lang/query.py``, ``Asked.analysed``): BM25's (its search, its exact scores, the reading check,
the expansion), the content terms (each hit's matching lines), the identifier tokens (the symbol
list, definition first) and the question's words (definition first, path match). Each is an
immutable value every stage shares; a stage handed no ``Asked`` analyses the text itself.

>>> from hybrid_rag.lang.query import Asked
>>> asked = Asked.of("Where is parse_config_file defined?", "en")
>>> sorted(question_words(asked)), [t.text for t in identifier_tokens(asked)]
(['config', 'parse'], ['parse_config_file'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybrid_rag.lang.query import Asked
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.lang.tokenize import content_terms as _content_terms
from hybrid_rag.protocols import OwnTokenizer
from hybrid_rag.retrieval.definition_first import question_words as _question_words
from hybrid_rag.symbols.question_names import IdentifierToken
from hybrid_rag.symbols.question_names import identifier_tokens as _identifier_tokens


def bm25_terms(index: object, asked: Asked | None, text: str) -> tuple[str, ...] | None:
    """``text`` (the question or a text made from it) as the keyword ``index``'s own tokenizer reads
    it, once a question (``Tokenizer.asked_terms``); None when the index has no tokenizer of its
    own or no ``asked`` is given: the index then reads the text itself."""
    tokenizer = index.tokenizer if isinstance(index, OwnTokenizer) else None
    if asked is None or not isinstance(tokenizer, Tokenizer):
        return None
    return tokenizer.asked_terms(asked, text)


def with_terms(index: object, asked: Asked | None, text: str) -> dict[str, Any]:
    """The ``terms=`` keyword of a keyword index's ``search``/``score`` for ``text`` (none when
    :func:`bm25_terms` has none: an index without its own tokenizer is called as before)."""
    terms = bm25_terms(index, asked, text)
    return {} if terms is None else {"terms": terms}


def content_terms(asked: Asked, text: str | None = None) -> frozenset[str]:
    """The question's content terms (``lang.tokenize.content_terms``, read as English and
    undetermined text are: the matching lines' rule), once a question."""
    return asked.analysed("content_terms", lambda t: frozenset(_content_terms(t)), text)


def identifier_tokens(asked: Asked) -> Sequence[IdentifierToken]:
    """The question's words that may name a definition (``symbols/question_names.py``), once."""
    return asked.analysed("identifier_tokens", lambda t: tuple(_identifier_tokens(t)))


def question_words(asked: Asked) -> frozenset[str]:
    """The question's words as identifier parts (``retrieval/definition_first.py``), once."""
    return asked.analysed("question_words", lambda t: frozenset(_question_words(t)))
