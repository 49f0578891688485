"""``GET /v1/symbols`` and ``GET /v1/outline``: the engine's symbol lookups over HTTP, in the
shapes of ``hybrid-rag symbols --json`` and ``hybrid-rag outline --json``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import Field

from hybrid_rag.code.members import SYMBOL_KINDS
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.server.errors import ApiError, documented
from hybrid_rag.server.limits import _Body
from hybrid_rag.symbols.render import matches_json, outline_json
from hybrid_rag.symbols.search import check_kinds

MAX_SYMBOLS = 200  # definitions one /v1/symbols answer may hold
MAX_NAME = 500
MAX_PATH = 4096
Mode = Literal["auto", "exact", "prefix", "fuzzy"]


class FindSymbolArgs(_Body):
    """The MCP tool ``find_symbol``'s arguments, with the bounds of ``GET /v1/symbols``."""

    name: str = Field(min_length=1, max_length=MAX_NAME, description="ConnectionPool, Pool.get, Foo::bar")
    mode: Mode = Field("auto", description="auto: exact then prefix matches, fuzzy when neither")
    kind: list[str] | None = Field(None, description="only these kinds: class, function, method, ...")
    path: str | None = Field(None, min_length=1, max_length=MAX_PATH, description="a path glob: src/**")
    limit: int = Field(20, ge=1, le=MAX_SYMBOLS)


class OutlineArgs(_Body):
    """The MCP tool ``outline``'s arguments, with the bounds of ``GET /v1/outline``."""

    path: str = Field(min_length=1, max_length=MAX_PATH, description="a file's path, as results show it")


def outline_of(engine: Engine, path: str, absolute_paths: bool) -> dict[str, Any]:
    """The outline of ``path``; 404 naming the field when no stored document has it."""
    try:
        entries = engine.outline(path, absolute_paths=absolute_paths)
    except InputError as exc:
        raise ApiError(404, f"path: {exc}", field="path", kind="not_found") from None
    return outline_json(path, entries)


def install(v1: APIRouter, call: Callable[..., Any], engine: Engine) -> None:
    """Add the two routes to the ``/v1`` router (its key check and error answers apply)."""

    @v1.get("/symbols")
    async def symbols(
        name: str = Query(
            min_length=1, max_length=MAX_NAME, description="ConnectionPool, Pool.get, Foo::bar"
        ),
        mode: Mode = Query("auto", description="auto: exact then prefix, fuzzy when neither"),  # noqa: B008
        kind: list[str] | None = Query(  # noqa: B008
            None,
            description="only these kinds (repeat the parameter)",
            json_schema_extra={"items": {"type": "string", "enum": list(SYMBOL_KINDS)}},  # named in the spec
        ),
        path: str | None = Query(None, min_length=1, max_length=MAX_PATH, description="a path glob: src/**"),
        limit: int = Query(20, ge=1, le=MAX_SYMBOLS),
        absolute_paths: bool = Query(False, description="stored paths, not relative to the ingested root"),
    ) -> dict[str, Any]:
        """Where a name is defined: exact, then prefix, then fuzzy matches, each cited
        ``path:start-end`` (as `hybrid-rag symbols NAME --json`)."""
        try:
            kind = check_kinds(kind)
        except InputError as exc:
            raise ApiError(422, f"kind: {exc}", field="kind") from None
        found = await call(
            engine.symbols, name, mode=mode, kinds=kind, path=path, limit=limit, absolute_paths=absolute_paths
        )
        return matches_json(name, found)

    @v1.get("/outline", responses=documented(404))
    async def outline(
        path: str = Query(min_length=1, max_length=MAX_PATH, description="a stored path, as results show it"),
        absolute_paths: bool = Query(False, description="stored paths, not relative to the ingested root"),
    ) -> dict[str, Any]:
        """A file's definitions in order, nested (``children``), each cited ``path:start-end`` (as
        `hybrid-rag outline FILE --json`)."""
        return await call(outline_of, engine, path, absolute_paths)
