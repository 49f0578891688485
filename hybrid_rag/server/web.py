"""The search page of ``hybrid-rag serve`` and the one route it needs beyond the API.

``/`` is a static page (``static/``: plain HTML, CSS and JS, no CDN, shipped as package data) that
calls the /v1 API with the key the user types once (kept in sessionStorage, sent as the Bearer
header, never in a URL). ``GET /v1/lines`` returns a stored document's lines, rebuilt from its
chunks, so a citation opens in its file; it takes the key and answers errors like every /v1 route.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from hybrid_rag.engine import Engine
from hybrid_rag.paths import stored_path
from hybrid_rag.retrieval.parent import document_lines
from hybrid_rag.server.errors import V1_ERRORS, ApiError, documented

STATIC = Path(__file__).parent / "static"
MAX_LINES = 5_000  # lines one /v1/lines answer may hold
# the page runs only its own files: no inline script, no other origin, never framed
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def stored_lines(engine: Engine, path: str, start_line: int | None, end_line: int | None) -> dict[str, Any]:
    """Lines ``start_line..end_line`` (default: all, at most MAX_LINES) of the stored document ``path``,
    rebuilt from its chunks (dropped near-duplicates included) as the version served indexed it. A range
    past the end gives the lines there are; one ending before it starts gives none; more than
    MAX_LINES are cut there (``truncated``). Every request the OpenAPI schema allows is answered."""
    wanted = {path, stored_path(path, engine.ingested_root())}  # as results show it, or as stored
    record = next((d for d in engine.documents() if d.path in wanted), None)
    if record is None:
        raise ApiError(404, f"path: no document {path!r} in the store", field="path", kind="not_found")
    lines = document_lines(engine.store.document_chunks(record.id, duplicates=True))
    total = max(lines, default=0)
    first = start_line or 1
    last = min(total, end_line or total)
    if last - first + 1 > MAX_LINES:
        last = first + MAX_LINES - 1
    return {
        "path": path,
        "document_id": record.id,
        "collection": record.collection,
        "source_type": record.source_type.value,
        "language": record.language,
        "total_lines": total,
        "start_line": first,
        "end_line": last,
        "truncated": last < min(total, end_line or total),
        "lines": [{"line": n, "text": lines.get(n)} for n in range(first, last + 1)],
    }


def install(app: FastAPI, call: Callable[..., Any], engine: Engine, require_key: Callable[..., None]) -> None:
    """Add the page (``/``, ``/static``) and ``GET /v1/lines`` to ``app``; ``call`` runs an engine call
    the way every route does (a worker thread, the request timeout)."""

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    v1 = APIRouter(prefix="/v1", dependencies=[Depends(require_key)], responses=documented(*V1_ERRORS))

    @v1.get("/lines", responses=documented(404))
    async def lines(
        path: str = Query(min_length=1, max_length=4096, description="a stored path, as results show it"),
        start_line: int | None = Query(None, ge=1, description="first line (default 1)"),
        end_line: int | None = Query(None, ge=1, description="last line (default the last)"),
    ) -> dict[str, Any]:
        """A stored document's lines (rebuilt from its chunks), for reading a citation in its file."""
        return await call(stored_lines, engine, path, start_line, end_line)

    app.include_router(v1)
