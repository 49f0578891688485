"""The HTTP API: FastAPI routes over the engine's public API, one engine per process.

Engine calls run in worker threads (at most ``server.max_concurrency`` at once), each bounded by
``server.request_timeout_seconds``; queries run in parallel with each other and with the one
writer (``jobs.py``). Shapes are the CLI's ``--json`` (``shapes.py``); errors are ``errors.py``'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, File, Form, Query, Response, UploadFile
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from hybrid_rag.engine import Engine
from hybrid_rag.errors import NoIndexError
from hybrid_rag.ingest.metadata import FrontMatterError, check_metadata
from hybrid_rag.querylog import QueryLog
from hybrid_rag.request import Query as Question
from hybrid_rag.server import errors
from hybrid_rag.server.auth import ApiKeys, BearerGuard
from hybrid_rag.server.errors import V1_ERRORS, ApiError, documented
from hybrid_rag.server.limits import (
    MAX_PAGE,
    AskBody,
    BodyLimit,
    ContextBody,
    GroupedBody,
    IngestBody,
    QueryBody,
    RollbackBody,
    bound_schema,
    grouping_of,
    query_of,
)
from hybrid_rag.server.references import install as install_references
from hybrid_rag.server.roots import confine
from hybrid_rag.server.service import NAME, UPLOADS, Service, exclusive
from hybrid_rag.server.service import delete as delete_document
from hybrid_rag.server.shapes import context_dict, document_dict, query_dict
from hybrid_rag.server.symbols import install as install_symbols
from hybrid_rag.server.uploads import INCOMING, stage_uploads
from hybrid_rag.server.web import install as install_web
from hybrid_rag.settings import Settings

UPLOAD_COLLECTION = "^(" + NAME.pattern.strip("^$") + ")?$"  # a form sends an empty one as its default


def create_app(settings: Settings, *, keys: ApiKeys | None, engine: Engine | None = None) -> FastAPI:
    """The app for ``settings`` (``keys`` None: no auth, which ``serve`` allows only on loopback)."""
    service = Service(engine or Engine(settings), keys)
    settings = service.settings  # a given engine's own
    service.engine.second_set.background = True  # a question it cannot read starts the second set

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(service.warm_up)
        yield
        await anyio.to_thread.run_sync(service.jobs.stop, settings.server.shutdown_grace_seconds)
        service.engine.close()

    app = FastAPI(
        title="hybrid-rag",
        version="1",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Hybrid retrieval (dense + BM25) with cited, token-budgeted context. Send "
        "'Authorization: Bearer <key>' to every /v1 route and /metrics.",
    )
    app.state.service = service
    default_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = bound_schema(default_openapi(), settings.server)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    errors.install(app, settings.logs_dir)
    app.add_middleware(BodyLimit, limits=settings.server)
    guarded = ("/v1", "/metrics")  # the key is checked before a body is read; the Host without keys
    app.add_middleware(BearerGuard, keys=keys, prefixes=guarded, allowed_hosts=settings.server.allowed_hosts)
    app.add_middleware(service.metrics.middleware)  # outermost: counts the 413s too

    bearer = HTTPBearer(auto_error=False)

    def require_key(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:  # noqa: B008
        service.authorize(credentials)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """The process answers (no key needed)."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], responses=documented(503))
    async def readyz(response: Response) -> dict[str, Any]:
        """Ready to answer queries: the model is loaded and an index version is live (no key needed)."""
        try:
            await service.call(service.engine.indices.get)
        except NoIndexError as exc:
            response.status_code = 503
            return {"ready": False, "reason": str(exc)}
        return {"ready": True}

    secured = APIRouter(dependencies=[Depends(require_key)], responses=documented(401, 503, 504))

    @secured.get("/metrics", tags=["ops"], response_class=Response)
    async def metrics() -> Response:
        """Prometheus text: requests and latency per route and per pipeline stage, index version, chunks."""
        stats = await service.call(service.engine.stats)
        body, content_type = service.metrics.render(
            version=stats.live_version, chunks=stats.chunks, documents=stats.documents
        )
        return Response(body, media_type=content_type)

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(require_key)], responses=documented(*V1_ERRORS))

    async def asked(body: QueryBody) -> Question:
        """``body`` checked against the limits and typed, off the loop."""
        return await service.call(query_of, body, service.limits, settings.features, settings.retrieval)

    @v1.post("/query")
    async def query(body: GroupedBody) -> dict[str, Any]:
        """Ranked chunks, as `hybrid-rag query --json` (the self-check only with features.self_check)."""
        query = await asked(body)
        self_check = bool((body.features or {}).get("self_check"))
        result, checked = await service.call(
            service.engine.retrieve, query, self_check=self_check, log=True, **grouping_of(body)
        )
        service.metrics.observe_result(result)
        return query_dict(result, checked)

    @v1.post("/context")
    async def context(body: ContextBody) -> dict[str, Any]:
        """Token-budgeted context with cited quotes, as `hybrid-rag context --json`."""
        query = await asked(body)
        built, checked = await service.call(
            service.engine.context, query, max_tokens=body.max_tokens, log=True, edges=body.edges
        )
        service.metrics.observe_result(built.result)
        return context_dict(built, checked)

    @v1.post("/ask")
    async def ask(body: AskBody) -> dict[str, Any]:
        """The context and, with generator.base_url set, the generator's cited answer."""
        query = await asked(body)
        answer = await service.call(
            service.engine.ask,
            query,
            max_tokens=body.max_tokens,
            edges=body.edges,
            answer_tokens=body.answer_tokens,
            log=True,
        )
        service.metrics.observe_result(answer.context.result)
        return answer.to_dict()

    @v1.post("/ingest", status_code=202, responses=documented(403, 404))
    async def ingest(body: IngestBody, response: Response) -> dict[str, Any]:
        """Ingest server-side paths (only below server.ingest_roots) as a job; poll GET /v1/jobs/{id}."""
        home = settings.data_dir
        paths = [
            confine(p, service.roots, field=f"paths[{i}]", data_dir=home) for i, p in enumerate(body.paths)
        ]
        try:
            check_metadata(body.metadata)
        except FrontMatterError as exc:
            raise ApiError(422, str(exc), field="metadata") from None
        request = {"paths": [str(p) for p in paths], "collection": body.collection, "dry_run": body.dry_run}
        job = service.ingest_job(
            paths, collection=body.collection, metadata=body.metadata, dry_run=body.dry_run, request=request
        )
        response.headers["Location"] = f"/v1/jobs/{job['id']}"
        return job

    @v1.get("/jobs/{job_id}", responses=documented(404))
    async def job(job_id: str) -> dict[str, Any]:
        """A job's status (queued, running, done, failed, interrupted), progress per stage, result."""
        return service.jobs.get(job_id)

    @v1.post("/documents", status_code=202)
    async def upload(
        response: Response,
        files: list[UploadFile] = File(..., min_length=1, description="the files to ingest"),  # noqa: B008
        collection: str = Form("uploads", pattern=UPLOAD_COLLECTION, description="empty: uploads"),
    ) -> dict[str, Any]:
        """Upload files (multipart, at most server.max_upload_bytes together) and ingest them as a job."""
        if not NAME.match(collection):
            raise ApiError(
                422,
                f"collection: {collection!r} is not a name (letters, digits, . _ - space)",
                field="collection",
            )
        folder = settings.data_dir / UPLOADS / collection
        incoming = settings.data_dir / "jobs" / INCOMING  # each request's own folder until its job runs
        limit = service.limits.max_upload_bytes
        staged = await service.call(stage_uploads, files, folder, incoming, limit, write=True)
        request = {"files": list(staged.names), "collection": collection}
        job = service.ingest_job(staged, collection=collection, metadata=None, dry_run=False, request=request)
        response.headers["Location"] = f"/v1/jobs/{job['id']}"
        return job

    @v1.get("/documents")
    async def documents(
        collection: str | None = Query(None, min_length=1, max_length=200),
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=MAX_PAGE),
        absolute_paths: bool = Query(False, description="stored paths, not relative to `root`"),
    ) -> dict[str, Any]:
        """Stored documents by path (``limit`` at most 1000), relative to the ingested ``root`` as
        results show them (``absolute_paths``: as stored)."""
        records, root = await service.call(
            lambda: (service.engine.documents(collection), service.engine.ingested_root())
        )
        shown = None if absolute_paths else root
        page = records[offset : offset + limit]
        rows = [document_dict(r, shown) for r in page]
        return {"total": len(records), "offset": offset, "root": root, "documents": rows}

    @v1.delete("/documents/{path:path}", responses=documented(404))
    async def delete(path: str) -> dict[str, Any]:
        """Remove one document (its path as GET /v1/documents lists it, or as stored) and its upload."""
        build = await service.call(delete_document, service, path, write=True)
        return {"deleted": path, "index_version": build.version, "chunks": build.chunks}

    @v1.get("/stats")
    async def stats() -> dict[str, Any]:
        """Documents, chunks, versions, sizes, model, and the query log's latency summary."""
        found = await service.call(service.engine.stats)
        queries = await service.call(QueryLog.in_dir(settings.logs_dir).summarize)
        return {**found.to_dict(), "queries": queries}

    @v1.get("/status")
    async def status() -> dict[str, Any]:
        """Files changed, new or deleted on disk since the index was built, as `hybrid-rag status --json`."""
        found = await service.call(service.engine.disk_status)
        return found.to_dict()

    @v1.get("/versions")
    async def versions() -> list[dict[str, Any]]:
        """Index versions on disk, as `hybrid-rag versions --json`."""
        return await service.call(service.engine.versions)

    @v1.post("/rollback", responses=documented(404))
    async def rollback(body: RollbackBody) -> dict[str, Any]:
        """Make an older version on disk live (404: no such version on disk; 409 while an ingest
        job writes)."""
        on_disk = [v["version"] for v in await service.call(service.engine.versions)]
        if body.version not in on_disk:  # was 409, as for "nothing ingested yet"
            listed = ", ".join(f"v{v}" for v in on_disk) or "none"
            raise ApiError(
                404,
                f"version: no index version {body.version} on disk (on disk: {listed})",
                field="version",
                kind="NoIndexError",
            )
        unserved = await service.call(exclusive, service, service.engine.rollback, body.version, write=True)
        return {"live_version": body.version, "unserved": unserved}  # stored, back at the next write

    install_symbols(v1, service.call, service.engine)  # GET /v1/symbols and /v1/outline
    install_references(v1, service.call, service.engine)  # GET /v1/refs, callers, callees, impact
    app.include_router(secured)
    app.include_router(v1)
    install_web(app, service.call, service.engine, require_key)  # the page at / and GET /v1/lines
    return app
