"""``GET /v1/refs``, ``/v1/callers``, ``/v1/callees`` and ``/v1/impact``: ``Engine.references`` over
HTTP, in the shapes of ``hybrid-rag refs|callers|callees|impact --json``; the argument models are
the MCP tools' too (``find_references``, ``callers``, ``callees``, ``impact``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query
from pydantic import Field

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.server.errors import ApiError, documented
from hybrid_rag.server.limits import _Body
from hybrid_rag.server.symbols import MAX_NAME, MAX_PATH
from hybrid_rag.symbols.references import MAX_DEPTH


class RefsArgs(_Body):
    """The MCP tool ``find_references``'s arguments (``GET /v1/refs``)."""

    name: str = Field(min_length=1, max_length=MAX_NAME, description="parse_filter, Pool.get, Foo::bar")


class GraphArgs(_Body):
    """The MCP tools ``callers`` and ``callees``'s arguments (``GET /v1/callers``, ``/v1/callees``)."""

    name: str = Field(min_length=1, max_length=MAX_NAME, description="parse_filter, Pool.get, Foo::bar")
    depth: int = Field(1, ge=1, le=MAX_DEPTH, description="levels to follow (1: direct only)")


class ImpactArgs(_Body):
    """The MCP tool ``impact``'s arguments (``GET /v1/impact``)."""

    target: str = Field(
        min_length=1, max_length=MAX_PATH, description="a file as results show it, or a definition's name"
    )
    depth: int = Field(2, ge=1, le=MAX_DEPTH, description="levels of dependents to follow")


def answer(
    engine: Engine, question: str, name: str, depth: int, absolute_paths: bool = False
) -> dict[str, Any]:
    """The engine's answer; an impact target that is neither a file nor a definition is a 404."""
    try:
        return engine.references(question, name, depth=depth, absolute_paths=absolute_paths)
    except InputError as exc:
        if question != "impact" or "no document" not in str(exc):
            raise
        raise ApiError(404, f"target: {exc}", field="target", kind="not_found") from None


def install(v1: APIRouter, call: Callable[..., Any], engine: Engine) -> None:
    """Add the four routes to the ``/v1`` router (its key check and error answers apply)."""
    name_query = Query(min_length=1, max_length=MAX_NAME, description="parse_filter, Pool.get, Foo::bar")
    shown = Query(False, description="stored paths, not relative to the ingested root")

    @v1.get("/refs")
    async def refs(name: str = name_query, absolute_paths: bool = shown) -> dict[str, Any]:
        """Every use of a name (calls, types, base classes, imports) grouped by file, each cited
        ``path:line-line`` with the definition it resolves to (as `hybrid-rag refs NAME --json`)."""
        return await call(answer, engine, "refs", name, 1, absolute_paths)

    @v1.get("/callers")
    async def callers(
        name: str = name_query, depth: int = Query(1, ge=1, le=MAX_DEPTH), absolute_paths: bool = shown
    ) -> dict[str, Any]:
        """The definitions that call NAME, ``depth`` levels up, each cited ``path:start-end``."""
        return await call(answer, engine, "callers", name, depth, absolute_paths)

    @v1.get("/callees")
    async def callees(
        name: str = name_query, depth: int = Query(1, ge=1, le=MAX_DEPTH), absolute_paths: bool = shown
    ) -> dict[str, Any]:
        """What NAME calls, ``depth`` levels down, each cited ``path:start-end``."""
        return await call(answer, engine, "callees", name, depth, absolute_paths)

    @v1.get("/impact", responses=documented(404))
    async def impact(
        target: str = Query(min_length=1, max_length=MAX_PATH, description="a file, or a definition's name"),
        depth: int = Query(2, ge=1, le=MAX_DEPTH),
        absolute_paths: bool = shown,
    ) -> dict[str, Any]:
        """The definitions and files that depend on a file or a definition, ranked."""
        return await call(answer, engine, "impact", target, depth, absolute_paths)
