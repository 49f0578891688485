"""The filter language: parsed here, below every user (``store/filter_sql.py`` compiles it to SQL,
``indices/milvus/filters.py`` to a Milvus expression, ``retrieval/`` applies it before a search).

``language`` is the grammar, fields and values; ``globs`` the path globs (a matcher that cannot
backtrack); ``cost`` what one filter may cost.
"""

from __future__ import annotations

from hybrid_rag.filters.ast import And, Compare, FilterExpr, InList, Not, Or
from hybrid_rag.filters.globs import glob_match, glob_to_regex, normalize_glob
from hybrid_rag.filters.language import (
    DATE,
    FIELDS,
    INT64,
    MAX_DEPTH,
    META,
    META_PREFIX,
    NUMBER,
    SOURCE,
    TEXT,
    as_filter,
    check,
    convert,
    field_name,
    filters_from_mapping,
    meta_value,
    parse_filter,
    parse_filters,
    parse_when,
)

__all__ = [
    "DATE",
    "FIELDS",
    "INT64",
    "MAX_DEPTH",
    "META",
    "META_PREFIX",
    "NUMBER",
    "SOURCE",
    "TEXT",
    "And",
    "Compare",
    "FilterExpr",
    "InList",
    "Not",
    "Or",
    "as_filter",
    "check",
    "convert",
    "field_name",
    "filters_from_mapping",
    "glob_match",
    "glob_to_regex",
    "meta_value",
    "normalize_glob",
    "parse_filter",
    "parse_filters",
    "parse_when",
]
