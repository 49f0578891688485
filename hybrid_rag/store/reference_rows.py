"""The code_references table's reads and writes (``schema._Reference``), for ``MetadataStore``.

A reference row is written with its document's row, in the same transaction, and read at a store
state exactly as a symbol row is (``symbol_rows.visible``): a version built from state ``S`` sees
the references written at or before ``S`` whose document was not yet retired at ``S``. Rows go in
through one executemany insert (a file holds hundreds of references: ORM objects would cost more
than the parse that found them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from sqlalchemy import Select, and_, bindparam, insert, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from hybrid_rag.store.schema import REFERENCES, _Document, _Reference, _Symbol
from hybrid_rag.symbols.model import Reference, ReferenceSpan, Symbol

_IN_BATCH = 900


def write(s: Session, document_id: int, spans: Sequence[ReferenceSpan], created: int) -> None:
    """Insert a document's references (nothing when it has none)."""
    if not spans:
        return
    s.execute(
        insert(REFERENCES),
        [
            {
                "document_id": document_id,
                "created": created,
                "name": sp.name,
                "kind": sp.kind,
                "line": sp.line,
                "qualifier": sp.qualifier,
                "module": sp.module,
                "scope": sp.scope,
            }
            for sp in spans
        ],
    )


def visible(state: int | None) -> ColumnElement[bool]:
    """The references a reader of store state ``state`` sees (None: the current state)."""
    if state is None:
        return _Document.retired.is_(None)
    return and_(_Reference.created <= state, or_(_Document.retired.is_(None), _Document.retired > state))


_REF_COLUMNS = (
    _Reference.id,
    _Reference.document_id,
    _Document.path,
    _Document.language,
    _Reference.name,
    _Reference.kind,
    _Reference.line,
    _Reference.qualifier,
    _Reference.module,
    _Reference.scope,
)
_SYMBOL_COLUMNS = (
    _Symbol.id,
    _Symbol.document_id,
    _Symbol.chunk_id,
    _Document.path,
    _Document.language,
    _Symbol.position,
    _Symbol.name,
    _Symbol.kind,
    _Symbol.qualified_name,
    _Symbol.signature,
    _Symbol.start_line,
    _Symbol.end_line,
    _Symbol.doc,
    _Symbol.parent,
)


def read(
    s: Session,
    *,
    state: int | None,
    names: Iterable[str] | None = None,
    document_ids: Iterable[int] | None = None,
    kinds: Sequence[str] | None = None,
    lines: tuple[int, int] | None = None,
) -> list[Reference]:
    """References by exact name (any of ``names``) or of documents, of ``kinds``, within ``lines``
    (first, last: one document's span), in (path, line) order. Plain column reads: an answer may
    read thousands of rows, and ORM objects would cost more than the query. The statement of each
    shape is built once (``_statement``) with its values bound at each call: building it again
    was most of a warm ``callers`` answer's time (RESULTS.md#callers-latency)."""
    by = "name" if names is not None else "document" if document_ids is not None else None
    query = _statement(state is not None, by, bool(kinds), lines is not None)
    params: dict[str, object] = {}
    if state is not None:
        params["state"] = state
    if kinds:
        params["kinds"] = list(kinds)
    if lines is not None:
        params["first"], params["last"] = lines
    if by is None:
        return [Reference(*row) for row in s.execute(query, params)]
    wanted = sorted(set(names if names is not None else document_ids or ()))  # type: ignore[type-var]
    out: list[Reference] = []
    for start in range(0, len(wanted), _IN_BATCH):
        batch = wanted[start : start + _IN_BATCH]
        out.extend(Reference(*row) for row in s.execute(query, {**params, "wanted": batch}))
    return out


@lru_cache(maxsize=32)
def _statement(at_state: bool, by: str | None, kinds: bool, lines: bool) -> Select:
    """The reference query of one shape, its values as bound parameters (``read``)."""
    if at_state:
        seen = and_(
            _Reference.created <= bindparam("state"),
            or_(_Document.retired.is_(None), _Document.retired > bindparam("state")),
        )
    else:
        seen = _Document.retired.is_(None)
    query = select(*_REF_COLUMNS).join(_Document, _Document.id == _Reference.document_id).where(seen)
    if kinds:
        query = query.where(_Reference.kind.in_(bindparam("kinds", expanding=True)))
    if lines:
        query = query.where(_Reference.line >= bindparam("first"), _Reference.line <= bindparam("last"))
    if by is not None:
        column = _Reference.name if by == "name" else _Reference.document_id
        query = query.where(column.in_(bindparam("wanted", expanding=True)))
    return query.order_by(_Document.path, _Reference.line, _Reference.id)


def symbols_of(
    s: Session,
    document_ids: Iterable[int],
    *,
    positions: Iterable[int] | None = None,
    qualified_names: Iterable[str] | None = None,
    chunk_ids: Iterable[int] | None = None,
) -> list[Symbol]:
    """The symbols of these document revisions (a revision's rows never change), by position:
    all of them, or those at ``positions``, with ``qualified_names`` or in ``chunk_ids`` (of any
    of the documents)."""
    wanted = sorted(set(document_ids))
    query = select(*_SYMBOL_COLUMNS).join(_Document, _Document.id == _Symbol.document_id)
    if chunk_ids is not None:
        query = query.where(_Symbol.chunk_id.in_(sorted(set(chunk_ids))))
    if positions is not None:
        query = query.where(_Symbol.position.in_(sorted(set(positions))))
    if qualified_names is not None:
        query = query.where(_Symbol.qualified_name.in_(sorted(set(qualified_names))))
    out: list[Symbol] = []
    for start in range(0, len(wanted), _IN_BATCH):
        batch = wanted[start : start + _IN_BATCH]
        rows = s.execute(query.where(_Symbol.document_id.in_(batch)).order_by(_Symbol.position))
        out.extend(Symbol(*row) for row in rows)
    return out
