"""The symbols table's reads and writes (``schema._Symbol``), for ``MetadataStore``.

A symbol row is written with its document's row and tied to it (``document_id``, cascade) and to
the chunk that holds its first line (``chunk_id``). Which rows a reader sees follows the index
version it serves (docs/contributing.md#one-row-id for chunks, here for definitions): a version
built from store state
``S`` sees the symbols written at or before ``S`` whose document was not yet retired at ``S``;
``state=None`` reads the current state. A changed file's new revision brings its new symbols and
retires the old ones with the old document row; a deleted file's symbols retire with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from hybrid_rag.store.filter_sql import GlobMatch
from hybrid_rag.store.schema import _Document, _Symbol
from hybrid_rag.symbols.model import Symbol, SymbolSpan
from hybrid_rag.types import fields_of

_IN_BATCH = 900

# the columns a definition's row shares with its SymbolSpan, and with the Symbol read back
_SPAN_COLUMNS = ("signature", "start_line", "end_line", "doc", "parent")
_SYMBOL_COLUMNS = ("id", "document_id", "chunk_id", "position", "name", "kind", "qualified_name")


def holding_chunk(chunks: Sequence[tuple[int, int, int]], span: SymbolSpan) -> int | None:
    """The id of the chunk (id, start_line, end_line) that holds the definition's first line and
    most of its lines (a definition's first chunk when it spans several); None when none holds it.

    >>> holding_chunk([(1, 1, 10), (2, 8, 30)], SymbolSpan("f", "function", "f", "def f():", 9, 25))
    2
    """
    best: tuple[int, int] | None = None
    for chunk_id, start, end in chunks:
        if start <= span.start_line <= end:
            overlap = min(end, span.end_line) - span.start_line
            if best is None or overlap > best[0]:
                best = (overlap, chunk_id)
    return None if best is None else best[1]


def symbol_rows(
    document_id: int, chunks: Sequence[tuple[int, int, int]], spans: Sequence[SymbolSpan], created: int
) -> list[_Symbol]:
    return [
        _Symbol(
            document_id=document_id,
            chunk_id=holding_chunk(chunks, sp),
            created=created,
            position=i,
            name_lower=sp.name.lower(),
            **fields_of(sp, "name", "kind", "qualified_name", *_SPAN_COLUMNS),
        )
        for i, sp in enumerate(spans)
    ]


def visible(state: int | None) -> ColumnElement[bool]:
    """The symbols a reader of store state ``state`` sees (None: the current state)."""
    if state is None:
        return _Document.retired.is_(None)
    return and_(_Symbol.created <= state, or_(_Document.retired.is_(None), _Document.retired > state))


def _query(state: int | None, path_glob: str | None, kinds: Sequence[str] | None) -> Select:
    query = select(_Symbol, _Document.path, _Document.language).join(_Document).where(visible(state))
    if path_glob:
        query = query.where(GlobMatch(_Document.path, path_glob))
    if kinds:
        query = query.where(_Symbol.kind.in_(list(kinds)))
    return query


def read(
    s: Session,
    *,
    state: int | None,
    names_lower: Iterable[str] | None = None,
    prefix_lower: str | None = None,
    path_glob: str | None = None,
    path: str | None = None,
    kinds: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[Symbol]:
    """Symbols by lower-cased name (any of ``names_lower``), by name prefix, or every one (of a
    path, a glob, kinds), in (path, position) order."""
    query = _query(state, path_glob, kinds)
    if path is not None:
        query = query.where(_Document.path == path)
    if prefix_lower is not None:
        escaped = prefix_lower.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = query.where(_Symbol.name_lower.like(escaped + "%", escape="\\"))
    query = query.order_by(_Document.path, _Symbol.position)
    if names_lower is None:
        return [_symbol(*row) for row in s.execute(query.limit(limit) if limit else query)]
    out: list[Symbol] = []
    wanted = sorted(set(names_lower))
    for start in range(0, len(wanted), _IN_BATCH):
        batch = wanted[start : start + _IN_BATCH]
        out.extend(_symbol(*row) for row in s.execute(query.where(_Symbol.name_lower.in_(batch))))
    return out


def names(s: Session, *, state: int | None, path_glob: str | None, kinds: Sequence[str] | None) -> list[str]:
    """The distinct symbol names a reader of ``state`` sees (for fuzzy lookups)."""
    query = _query(state, path_glob, kinds).with_only_columns(_Symbol.name).distinct()
    return list(s.scalars(query))


def _symbol(row: _Symbol, path: str, language: str) -> Symbol:
    """A stored definition: its row's columns, and its document's path and language."""
    return Symbol(path=path, language=language, **fields_of(row, *_SYMBOL_COLUMNS, *_SPAN_COLUMNS))
