"""Which vector set answers a question: the index's first one, or its second (``indices/second_dense.py``).

The first set answers every question its model reads; the second one answers a question the
first model cannot read (``retrieval/reading.py``: a Russian question over MiniLM's English
index) when the second model reads it (multilingual-e5-small reads Russian). The question is then
read as it would be with the second model as the only one (a cross-language question: dense from
the second set, BM25 skipped, RESULTS.md#unread-question-fusion), and the trace names the set that
answered (``Trace.vectors``). An English question over an English index never gets here: its
rankings are those of the first set, to the digit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hybrid_rag.models.languages import model_languages
from hybrid_rag.retrieval.reading import Reading, foreign_script


def first_cannot_read(lang: str, text: str, model: str) -> bool:
    """Whether the first dense model cannot read a question in ``lang`` (``und``: only a script
    an English-only model cannot read says so, as ``reading._undetermined`` decides).

    >>> minilm = "sentence-transformers/all-MiniLM-L6-v2"
    >>> first_cannot_read("ru", "", minilm), first_cannot_read("en", "", minilm)
    (True, False)
    """
    known = model_languages(model)
    if known is None:
        return False
    if lang == "und":
        return foreign_script(text) is not None and not (known - {"en"})
    return lang not in known


def second_reads(lang: str, text: str, model: str) -> bool:
    """Whether the second model is known to read the question (``und``: a script other than Latin,
    which a multilingual model reads)."""
    known = model_languages(model)
    if known is None:
        return False
    if lang == "und":
        return bool(known - {"en"}) and foreign_script(text) is not None
    return lang in known


def with_second_set(
    reading: Reading,
    lang: str,
    text: str,
    first_model: str,
    second_model: str | None,
    read: Callable[[str], Reading],
    *,
    dense_searched: bool,
) -> Reading:
    """``reading`` (the first set's), or the second set's when the index cannot read the question
    (``reading.unread``: neither the first model nor BM25; a question BM25 reads, such as English
    names in a Russian question or an English question misdetected as another language, keeps the
    first set and its rankings), the second model can, and the dense stage is searched in this
    query (``read(model)``: the question's reading with that model as the dense one)."""
    if not reading.unread or not second_model or not dense_searched:
        return reading
    if not first_cannot_read(lang, text, first_model):
        return reading
    if not second_reads(lang, text, second_model):
        return reading
    other = read(second_model)
    if other.unread or other.dense_scale < 1.0:
        return reading
    first = first_model.split("#", 1)[0]
    what = lang if lang != "und" else "this script"
    note = f"dense: the second vector set ({second_model}) answered: the index's model {first} does not read "
    note += what
    return replace(other, vectors=second_model, notes=(*other.notes, note))
