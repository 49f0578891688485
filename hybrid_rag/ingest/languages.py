"""A chunk's natural language, decided once at ingest: right after the chunker cuts a file.

The span carries it (``ChunkSpan.lang``); the store writes it with the chunk
(``MetadataStore.write_files``), and the BM25 term workers (``ingest/term_prefetch.py``) read the
chunk in it, so no later stage detects it again. A code chunk's language is its comments'
(``lang/detect.detect_chunk_language``); BM25 still reads code in the base analysis
(``analysis_lang``, as ``lang/tokenize.analysis_language`` reads a stored chunk).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hybrid_rag.lang.detect import UNDETERMINED, detect_chunk_language
from hybrid_rag.types import ChunkSpan, LoadedFile, SourceType


def with_languages(spans: Sequence[ChunkSpan], file: LoadedFile) -> list[ChunkSpan]:
    """``spans`` of ``file``, each with its natural language (a span that has one keeps it)."""
    code = file.source_type is SourceType.CODE
    return [
        sp if sp.lang is not None else replace(sp, lang=detect_chunk_language(sp.text, code=code).code)
        for sp in spans
    ]


def analysis_lang(span: ChunkSpan, file: LoadedFile) -> str:
    """The language BM25 reads ``span`` in: ``und`` for code, else the span's own."""
    if file.source_type is SourceType.CODE or span.lang is None:
        return UNDETERMINED
    return span.lang
