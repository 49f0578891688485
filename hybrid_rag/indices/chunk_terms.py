"""A chunk's BM25 terms through the store's token cache: read where cached, tokenised (and stored)
where not, each chunk in its analysis language (``lang/tokenize.py`` makes the terms)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hybrid_rag.lang.tokenize import Tokenizer, analysis_language

if TYPE_CHECKING:
    from hybrid_rag.store import MetadataStore
    from hybrid_rag.types import Chunk


def chunk_terms(
    store: MetadataStore, tokenizer: Tokenizer, chunks: Sequence[Chunk], *, cache_new: bool = True
) -> list[list[str]]:
    """Each chunk's BM25 terms, read from the store's cache (keyed by chunk sha256 and
    ``tokenizer.cache_key()``); text not cached yet is tokenised, and stored when ``cache_new``.

    The index build caches every chunk it indexes, so a query (``cache_new=False``: queries do
    not write) finds the terms of any indexed chunk without tokenising it again.
    """
    if not tokenizer.languages:
        return _cached_terms(store, tokenizer, chunks, None, cache_new)
    by_lang: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        by_lang.setdefault(analysis_language(c), []).append(i)
    terms: list[list[str]] = [[] for _ in chunks]
    for lang, where in by_lang.items():  # the same text in two languages has two cache rows
        found = _cached_terms(store, tokenizer, [chunks[i] for i in where], lang, cache_new)
        for i, t in zip(where, found, strict=True):
            terms[i] = t
    return terms


def terms_cache_key(tokenizer_key: str, lang: str | None) -> str:
    """The store's token-cache key of a tokenizer's terms (``Tokenizer.cache_key()``, computed once
    by the caller: it hashes the analyzers' table) read in ``lang`` (None: without languages)."""
    return tokenizer_key if lang is None else f"{tokenizer_key}:{lang}"


def _cached_terms(
    store: MetadataStore, tokenizer: Tokenizer, chunks: Sequence[Chunk], lang: str | None, cache_new: bool
) -> list[list[str]]:
    key = terms_cache_key(tokenizer.cache_key(), lang)
    cached = store.cached_tokens(key, (c.sha256 for c in chunks))
    todo = {c.sha256: c.text for c in chunks if c.sha256 not in cached}
    if todo:
        texts = list(todo.values())
        langs = None if lang is None else [lang] * len(texts)
        fresh = dict(zip(todo, tokenizer.tokenize_many(texts, langs), strict=True))
        if cache_new:
            store.put_tokens(key, fresh)
        cached.update(fresh)
    return [cached[c.sha256] for c in chunks]
