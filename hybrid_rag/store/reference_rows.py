"""The code_references table's reads and writes (``schema._Reference``), for ``MetadataStore``.

A reference row is written with its document's row, in the same transaction, and read at a store
state exactly as a symbol row is (``symbol_rows.visible``): a version built from state ``S`` sees
the references written at or before ``S`` whose document was not yet retired at ``S``. Rows go in
through one executemany insert (a file holds hundreds of references: ORM objects would cost more
than the parse that found them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import and_, insert, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from hybrid_rag.store.schema import REFERENCES, _Document, _Reference, _Symbol
from hybrid_rag.store.symbol_rows import _symbol
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
    (first, last: one document's span), in (path, line) order."""
    query = select(_Reference, _Document.path, _Document.language).join(_Document).where(visible(state))
    if kinds:
        query = query.where(_Reference.kind.in_(list(kinds)))
    if lines is not None:
        query = query.where(_Reference.line >= lines[0], _Reference.line <= lines[1])
    query = query.order_by(_Document.path, _Reference.line, _Reference.id)
    if names is None and document_ids is None:
        return [_reference(*row) for row in s.execute(query)]
    column = _Reference.name if names is not None else _Reference.document_id
    wanted = sorted(set(names if names is not None else document_ids or ()))  # type: ignore[type-var]
    out: list[Reference] = []
    for start in range(0, len(wanted), _IN_BATCH):
        batch = wanted[start : start + _IN_BATCH]
        out.extend(_reference(*row) for row in s.execute(query.where(column.in_(batch))))
    return out


def symbols_of(s: Session, document_ids: Iterable[int]) -> list[Symbol]:
    """Every symbol of these document revisions (a revision's rows never change), by position."""
    wanted = sorted(set(document_ids))
    out: list[Symbol] = []
    query = select(_Symbol, _Document.path, _Document.language).join(_Document)
    for start in range(0, len(wanted), _IN_BATCH):
        batch = wanted[start : start + _IN_BATCH]
        rows = s.execute(query.where(_Symbol.document_id.in_(batch)).order_by(_Symbol.position))
        out.extend(_symbol(*row) for row in rows)
    return out


def _reference(row: _Reference, path: str, language: str) -> Reference:
    return Reference(
        id=row.id,
        document_id=row.document_id,
        path=path,
        language=language,
        name=row.name,
        kind=row.kind,
        line=row.line,
        qualifier=row.qualifier,
        module=row.module,
        scope=row.scope,
    )
