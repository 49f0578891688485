"""Every error the HTTP API answers, in one place: the engine's error types mapped to a status, and
one JSON body for all of them: ``{"error": {"status", "type", "field", "message"}}``.

Bad input is a 4xx naming the field; a bug is a 500 whose body says only that it was logged (the
traceback goes to ``logs/errors.log``, never into a response).
"""

from __future__ import annotations

import logging
import re
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from hybrid_rag import errors
from hybrid_rag.deadline import DeadlineExceeded
from hybrid_rag.private_files import append_private

log = logging.getLogger("hybrid_rag.server")

# the most specific type first: the first isinstance match decides
STATUS: tuple[tuple[type[errors.HybridRagError], int], ...] = (
    (DeadlineExceeded, 504),  # the request's time ran out and its work was stopped
    (errors.InputError, 400),
    (errors.ConfigError, 400),  # a per-call feature override the settings refuse
    (errors.NoIndexError, 409),  # nothing ingested yet: ingest first
    (errors.IndexMismatchError, 409),  # the index needs `hybrid-rag rebuild`
    (errors.WriterBusyError, 409),  # another write holds the writer lock: try again when it is done
    (errors.RemoteServiceError, 502),  # a generator, reranker or embedding server failed
    (errors.CorruptIndexError, 503),
    (errors.StoreError, 503),
    (errors.ModelError, 503),
    (errors.HybridRagError, 400),
)


class ErrorDetail(BaseModel):
    status: int
    type: str
    field: str | None = None
    message: str


class ErrorResponse(BaseModel):
    """Every error answer's body."""

    error: ErrorDetail


MEANING = {
    403: "a server-side path outside server.ingest_roots, or server-side ingest is off",
    400: "bad input the engine refused (a bad override)",
    401: "missing or wrong API key",
    404: "no such job, document, ingest path or index version",
    409: "nothing ingested yet, the index needs a rebuild, or another write is running",
    413: "the body is over server.max_body_bytes (uploads: server.max_upload_bytes)",
    422: "the request does not match its schema or a server limit (the field is named)",
    502: "a generator, reranker or embedding server failed",
    503: "the store or the index cannot be read, or the model cannot load",
    504: "over server.request_timeout_seconds; a read's work was stopped",
}
V1_ERRORS = (400, 401, 409, 413, 422, 502, 503, 504)  # what any /v1 route may answer


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses (one JSON shape: ``ErrorResponse``)."""
    return {code: {"model": ErrorResponse, "description": MEANING[code]} for code in statuses}


class ApiError(Exception):
    """A 4xx decided by the server layer itself: a limit, a path outside the ingest roots, auth."""

    def __init__(self, status: int, message: str, *, field: str | None = None, kind: str = "invalid_request"):
        super().__init__(message)
        self.status, self.message, self.field, self.kind = status, message, field, kind


def status_of(exc: errors.HybridRagError) -> int:
    return next(code for kind, code in STATUS if isinstance(exc, kind))


def error_body(status: int, kind: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"status": status, "type": kind, "field": field, "message": message}}


def error_response(
    status: int, kind: str, message: str, field: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, kind, message, field), status_code=status, headers=headers)


def _field(loc: tuple[Any, ...]) -> str:
    """``("body", "top_k")`` -> ``top_k``; ``("body", "paths", 2)`` -> ``paths[2]``."""
    parts = list(loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc)
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "body"


def log_crash(logs_dir: Path, request: Request, exc: BaseException) -> None:
    try:
        with append_private(logs_dir / "errors.log") as handle:  # it holds query and filter text
            stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
            handle.write(f"--- {stamp} hybrid-rag serve {request.method} {request.url.path}\n")
            handle.write("".join(traceback.format_exception(exc)))
    except OSError:
        log.exception("unexpected error in %s %s", request.method, request.url.path)


def _methods(request: Request) -> list[str]:
    """The methods the OpenAPI document gives the request's path (every route sharing it)."""
    found: set[str] = set()
    for template, operations in request.app.openapi().get("paths", {}).items():
        pattern = re.sub(r"\\{[^}]+\\}", ".+", re.escape(template))
        if re.fullmatch(pattern, request.url.path):
            found |= {method.upper() for method in operations}
    return sorted(found)


def install(app: FastAPI, logs_dir: Path) -> None:
    """Register the handlers: validation (422, the field named), the API's own 4xx, the engine's
    errors (by ``STATUS``), HTTP errors (404, 405 ...) and anything else (500, logged)."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid request"}
        field = _field(tuple(first.get("loc", ())))
        message = str(first.get("msg", "invalid value"))
        if first.get("type") == "json_invalid":
            field, message = "body", "the body is not valid JSON"
        return error_response(422, "invalid_request", f"{field}: {message}", field)

    @app.exception_handler(ApiError)
    async def _api(_: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.kind, exc.message, exc.field, headers)

    @app.exception_handler(errors.HybridRagError)
    async def _engine(_: Request, exc: errors.HybridRagError) -> JSONResponse:
        return error_response(
            status_of(exc), type(exc).__name__, str(exc).splitlines()[0] if str(exc) else ""
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:  # every method of the path (two routes may share it), not one route's
            headers = {**(headers or {}), "Allow": ", ".join(_methods(request))}
        return error_response(
            exc.status_code, "http_error", str(exc.detail), getattr(exc, "field", None), headers
        )

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log_crash(logs_dir, request, exc)
        return error_response(
            500, "internal_error", f"unexpected {type(exc).__name__}; details in the server log"
        )
