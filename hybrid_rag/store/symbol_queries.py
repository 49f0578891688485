"""The store's symbols and references (rows written by ``symbol_rows``/``reference_rows``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import delete, func, select

from hybrid_rag.store import reference_rows, symbol_rows
from hybrid_rag.store.rows import _LIVE
from hybrid_rag.store.schema import (
    CODE_PARSE,
    CODE_PARSE_VERSION,
    REFERENCES_PENDING,
    SYMBOLS_PENDING,
    _Document,
    _Meta,
    _Reference,
    _Symbol,
)
from hybrid_rag.store.sessions import StoreSessions
from hybrid_rag.symbols.model import Reference, Symbol


class SymbolRows(StoreSessions):
    """The code's symbols and references, as stored by ingest."""

    def symbols(
        self,
        *,
        state: int | None = None,
        names: Iterable[str] | None = None,
        prefix: str | None = None,
        path_glob: str | None = None,
        path: str | None = None,
        kinds: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Symbol]:
        """Definitions seen at store state ``state`` (None: the current one), in (path, position)
        order: those whose name is one of ``names`` or starts with ``prefix`` (case-insensitive),
        of a stored ``path`` or a ``path_glob``, of ``kinds`` (``store/symbol_rows.py``)."""
        with self._session() as s:
            return symbol_rows.read(
                s,
                state=state,
                names_lower=None if names is None else [n.lower() for n in names],
                prefix_lower=None if prefix is None else prefix.lower(),
                path_glob=path_glob,
                path=path,
                kinds=kinds,
                limit=limit,
            )

    def symbol_names(
        self, *, state: int | None = None, path_glob: str | None = None, kinds: Sequence[str] | None = None
    ) -> list[str]:
        """The distinct definition names seen at ``state`` (for fuzzy lookups)."""
        with self._session() as s:
            return symbol_rows.names(s, state=state, path_glob=path_glob, kinds=kinds)

    def symbols_pending(self) -> bool:
        """Whether the store was migrated from before symbols (or before references), or its code
        files were parsed by an older parse (``CODE_PARSE_VERSION``), and no ingest has recorded
        them again yet."""
        with self._session() as s:
            keys = (SYMBOLS_PENDING, REFERENCES_PENDING)
            if s.scalar(select(_Meta.value).where(_Meta.key.in_(keys))) is not None:
                return True
            return s.scalar(select(_Meta.value).where(_Meta.key == CODE_PARSE)) != str(CODE_PARSE_VERSION)

    def symbols_recorded(self) -> None:
        """Forget ``symbols_pending`` (an ingest rewrote the code files it found with this parse)."""
        with self._session() as s, s.begin():
            s.execute(delete(_Meta).where(_Meta.key.in_((SYMBOLS_PENDING, REFERENCES_PENDING, CODE_PARSE))))
            s.add(_Meta(key=CODE_PARSE, value=str(CODE_PARSE_VERSION)))

    def references(
        self,
        *,
        state: int | None = None,
        names: Iterable[str] | None = None,
        document_ids: Iterable[int] | None = None,
        kinds: Sequence[str] | None = None,
        lines: tuple[int, int] | None = None,
    ) -> list[Reference]:
        """Uses of names seen at store state ``state``, by exact name or document, of ``kinds``,
        within ``lines`` (``store/reference_rows.py``)."""
        with self._session() as s:
            return reference_rows.read(
                s, state=state, names=names, document_ids=document_ids, kinds=kinds, lines=lines
            )

    def symbols_of(
        self,
        document_ids: Iterable[int],
        *,
        positions: Iterable[int] | None = None,
        qualified_names: Iterable[str] | None = None,
        chunk_ids: Iterable[int] | None = None,
    ) -> list[Symbol]:
        """The definitions of these document revisions (all, or those at ``positions``, with
        ``qualified_names`` or in ``chunk_ids``), in file order."""
        with self._session() as s:
            return reference_rows.symbols_of(
                s, document_ids, positions=positions, qualified_names=qualified_names, chunk_ids=chunk_ids
            )

    def reference_count(self) -> int:
        """References in the current state."""
        with self._session() as s:
            return s.scalar(select(func.count(_Reference.id)).join(_Document).where(_LIVE)) or 0

    def symbol_count(self) -> int:
        """Definitions in the current state."""
        with self._session() as s:
            query = select(func.count(_Symbol.id)).join(_Document).where(_LIVE)
            return s.scalar(query) or 0
