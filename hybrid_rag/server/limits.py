"""Request bodies and the limits in ``server.*``: typed request models (strict JSON types, unknown
fields refused), the per-request checks that name the field, and the body-size guard.

Filters and feature overrides are checked with the engine's own parsers (``filters/``,
``resolve_flags``) so a bad one is a 422 naming ``filters`` / ``features`` before any work starts.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from starlette.exceptions import HTTPException

from hybrid_rag import filters as filter_lang
from hybrid_rag.errors import HybridRagError
from hybrid_rag.filters.cost import check_cost
from hybrid_rag.lang.query import normalize_code
from hybrid_rag.request import Query
from hybrid_rag.retrieval.fusion import FusionMode
from hybrid_rag.retrieval.retriever import resolve_flags
from hybrid_rag.server.errors import ApiError, error_body
from hybrid_rag.settings import FeatureFlags, RetrievalSettings, ServerSettings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
UPLOAD_PATH = "/v1/documents"  # multipart uploads: server.max_upload_bytes instead of max_body_bytes


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _whole(value: object) -> object:
    """A JSON number with no fraction (``5.0``) is the integer JSON Schema says it is; ``"5"`` and
    ``true`` stay refused (strict)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


MAX_VERSION = 999_999_999  # versions are numbered from 1; far below 2**53, so exact in any JSON parser
MAX_PAGE = 1000  # documents listed at most in one answer (HTTP limit, MCP list_documents)
# integers with their bounds inside (so the OpenAPI document states them)
Positive = Annotated[int, Field(ge=1), BeforeValidator(_whole)]
NonNegative = Annotated[int, Field(ge=0), BeforeValidator(_whole)]
AnswerTokens = Annotated[int, Field(ge=1, le=32_000), BeforeValidator(_whole)]
Version = Annotated[int, Field(ge=1, le=MAX_VERSION), BeforeValidator(_whole)]
PageSize = Annotated[int, Field(ge=1, le=MAX_PAGE), BeforeValidator(_whole)]
UnitsPerFile = Annotated[int, Field(ge=1, le=20), BeforeValidator(_whole)]  # group="file"
TEXT = r"\S"  # a string with something in it besides white space
PATH = r"^[^\x00]*[^\s\x00][^\x00]*$"  # and no NUL


class QueryBody(_Body):
    query: str = Field(min_length=1, pattern=TEXT, description="the question or keywords")
    top_k: Positive | None = Field(None, description="results to return (default retrieval.top_k)")
    mode: Literal["dense", "bm25", "hybrid"] | None = None
    filters: str | list[str] | dict[str, Any] | None = Field(
        None, description="a filter expression, a list of them (ANDed) or a mapping field -> value(s)"
    )
    features: dict[str, bool] | None = Field(
        None, description='per-call stage switches, e.g. {"rerank": true}'
    )
    lang: str | None = Field(
        None,
        pattern=r"^[A-Za-z]{2,3}$",
        description="the query's language (ISO 639-1, e.g. ru, pt; und), instead of the detected one",
    )
    fusion: str | None = Field(
        None,
        description="another fusion rule than retrieval.fusion for this call: rrf, weighted, zscore, "
        "relative_score, dbsf",
        # the schema names the rules; a value that is none is checked by the engine's own parser
        # (check_query: a 422 naming ``fusion`` with the engine's message), not by pydantic's
        json_schema_extra={"enum": [*(rule.value for rule in FusionMode), None]},
    )


class GroupedBody(QueryBody):
    """``/v1/query`` and the MCP ``search`` tool: a question, and whether to rank files instead of chunks."""

    group: Literal["chunk", "file"] | None = Field(
        None, description="file: files ranked by their evidence, each with its best units (top_k: files)"
    )
    units_per_file: UnitsPerFile | None = Field(None, description="with group file: units per file (3)")


class ContextBody(QueryBody):
    max_tokens: Positive | None = Field(None, description="token budget (default context.max_context_tokens)")
    edges: Literal["off", "signatures"] | None = Field(
        None,
        description="a question about one definition: its callers' and callees' signatures too "
        "(default context.edges)",
    )


class AskBody(ContextBody):
    answer_tokens: AnswerTokens = 512


class IngestBody(_Body):
    paths: list[Annotated[str, Field(min_length=1, pattern=PATH)]] = Field(
        min_length=1, max_length=1000, description="server-side paths below ingest_roots"
    )
    collection: str = Field("default", min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None
    dry_run: bool = False


class RollbackBody(_Body):
    version: Version = Field(description="an index version on disk (GET /v1/versions)")


COLLECTION = Field(None, min_length=1, max_length=200, description="only this collection")


# -- the MCP tools' arguments: the same models, so both surfaces refuse the same input ----------


class SearchArgs(GroupedBody):
    top_k: Positive | None = Field(8, description="results to return (1-100)")


class ContextArgs(ContextBody):
    max_tokens: Positive | None = Field(3000, description="token budget of the context")


class DocumentsArgs(_Body):
    collection: str | None = COLLECTION
    offset: NonNegative = 0
    limit: PageSize = 200


class NoArgs(_Body):
    pass


class IngestPathArgs(_Body):
    path: str = Field(
        min_length=1, pattern=PATH, description="a folder, file or zip below server.ingest_roots"
    )
    collection: str = Field("default", min_length=1, max_length=200)


def check_query(
    body: QueryBody,
    limits: ServerSettings,
    features: FeatureFlags,
    retrieval: RetrievalSettings | None = None,
) -> dict[str, Any]:
    """The engine's keyword arguments for ``body``, after the limits (a filter's cost too, with
    ``retrieval``: a 422 naming ``filters``, as docs/serving.md says, not the engine's 400);
    ApiError (422) names the field.
    The routes run it in a worker thread under the request timeout: a long filter parses off the
    event loop (``/healthz`` and other requests keep answering)."""
    if not body.query.strip():
        raise ApiError(422, "query: must not be blank", field="query")
    if len(body.query) > limits.max_query_chars:
        raise ApiError(
            422,
            f"query: {len(body.query)} characters, over server.max_query_chars {limits.max_query_chars}",
            field="query",
        )
    if body.top_k is not None and body.top_k > limits.max_top_k:
        raise ApiError(422, f"top_k: {body.top_k} is over server.max_top_k {limits.max_top_k}", field="top_k")
    max_tokens = getattr(body, "max_tokens", None)
    if max_tokens is not None and max_tokens > limits.max_tokens:
        raise ApiError(
            422, f"max_tokens: {max_tokens} is over server.max_tokens {limits.max_tokens}", field="max_tokens"
        )
    for field, check in (
        ("filters", lambda: _costed(filter_lang.as_filter(body.filters), retrieval)),
        ("features", lambda: resolve_flags(features, body.features)),
        ("lang", lambda: normalize_code(body.lang or "")),  # "xx" was taken, read as no language
        ("fusion", lambda: FusionMode.from_str(body.fusion) if body.fusion is not None else None),
    ):
        try:
            check()
        except HybridRagError as exc:
            raise ApiError(422, f"{field}: {exc}", field=field) from None
    found = {"top_k": body.top_k, "mode": body.mode, "filters": body.filters, "features": body.features}
    return {
        **found,
        **({"lang": body.lang} if body.lang else {}),
        **({"fusion": body.fusion} if body.fusion is not None else {}),
    }


def query_of(
    body: QueryBody,
    limits: ServerSettings,
    features: FeatureFlags,
    retrieval: RetrievalSettings | None = None,
) -> Query:
    """``body`` as the engine's typed request (``hybrid_rag/request.py``), after ``check_query``;
    the grouping of a ``GroupedBody`` is not part of it (``grouping_of``)."""
    return Query.of(body.query, **check_query(body, limits, features, retrieval))


GROUPING = ("group", "units_per_file")  # GroupedBody's fields, passed beside the Query


def grouping_of(body: QueryBody) -> dict[str, Any]:
    """A ``GroupedBody``'s grouping as keywords of ``Engine.retrieve`` (none when not set)."""
    return {name: getattr(body, name) for name in GROUPING if getattr(body, name, None) is not None}


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` mid-stream; FastAPI passes HTTPExceptions through its body parsing."""

    field = "body"

    def __init__(self, limit: int, setting: str) -> None:
        super().__init__(413, f"the request body is over {setting} ({limit} bytes)")


class BodyLimit:
    """ASGI middleware: refuse a body over ``max_body_bytes`` (uploads: ``max_upload_bytes``) by its
    Content-Length at once, or while it streams in when it has none (or lies)."""

    def __init__(
        self, app: Callable[[Scope, Receive, Send], Awaitable[None]], limits: ServerSettings
    ) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["path"] == UPLOAD_PATH
        limit = self.limits.max_upload_bytes if upload else self.limits.max_body_bytes
        setting = "server.max_upload_bytes" if upload else "server.max_body_bytes"
        too_large = BodyTooLarge(limit, setting)
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _send_json(send, 413, error_body(413, "http_error", str(too_large.detail), "body"))
            return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except BodyTooLarge:
            if not started:
                await _send_json(send, 413, error_body(413, "http_error", str(too_large.detail), "body"))


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def bound_schema(schema: dict[str, Any], limits: ServerSettings) -> dict[str, Any]:
    """The OpenAPI document with the configured limits as the request bodies' bounds (``query``
    length, ``top_k``, ``max_tokens``) and the feature flags by name, so that a request valid by
    the document is one the server takes."""
    bounds = {
        "query": {"maxLength": limits.max_query_chars},
        "top_k": {"maximum": limits.max_top_k},
        "max_tokens": {"maximum": limits.max_tokens},
    }
    flags = {
        "type": "object",
        "properties": {name: {"type": "boolean"} for name in FeatureFlags.model_fields},
        "additionalProperties": False,
    }
    for name, model in schema.get("components", {}).get("schemas", {}).items():
        if not name.endswith("Body"):
            continue
        features = model.get("properties", {}).get("features")
        if features is not None:  # the flags by name: an unknown one is refused (resolve_flags)
            features["anyOf"] = [flags if o.get("type") == "object" else o for o in features.get("anyOf", [])]
        for field, extra in bounds.items():
            prop = model.get("properties", {}).get(field)
            if prop is None:
                continue
            for option in prop.get("anyOf", [prop]):
                if option.get("type") in ("string", "integer"):
                    option.update(extra)
    return schema


def _costed(expr: Any, retrieval: RetrievalSettings | None) -> None:
    """InputError when ``expr`` is over a filter cost limit of ``retrieval``."""
    if retrieval is not None:
        check_cost(
            expr,
            max_terms=retrieval.filter_max_terms,
            max_globs=retrieval.filter_max_globs,
            max_glob_chars=retrieval.filter_max_glob_chars,
        )
