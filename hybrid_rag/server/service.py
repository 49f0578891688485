"""What the HTTP routes share: the engine, the writer, the limits, the metrics; and the helpers of
the write routes (uploads saved, deletes under the writer lock)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from fastapi.security import HTTPAuthorizationCredentials

from hybrid_rag.deadline import DeadlineExceeded, run_within
from hybrid_rag.engine import Engine
from hybrid_rag.errors import NoIndexError
from hybrid_rag.paths import stored_path
from hybrid_rag.server.auth import ApiKeys
from hybrid_rag.server.errors import ApiError
from hybrid_rag.server.jobs import JobRunner
from hybrid_rag.server.metrics import Metrics
from hybrid_rag.server.roots import resolved_roots
from hybrid_rag.server.uploads import NAME, StagedUploads

T = TypeVar("T")
__all__ = ["NAME", "UPLOADS", "Service", "delete", "exclusive"]
UPLOADS = "uploads"  # in the data dir: uploaded files, one folder per collection


class Service:
    """What the routes share: the engine, the writer, the limits, the metrics."""

    def __init__(self, engine: Engine, keys: ApiKeys | None) -> None:
        settings = self.settings = engine.settings
        self.limits = settings.server
        self.engine = engine
        self.keys = keys
        self.jobs = JobRunner(settings.data_dir / "jobs", settings.logs_dir)
        self.metrics = Metrics()
        self.roots = resolved_roots(settings.server.ingest_roots)
        self.limiter = anyio.CapacityLimiter(settings.server.max_concurrency)

    async def call(self, fn: Callable[..., T], *args: Any, write: bool = False, **kwargs: Any) -> T:
        """``fn`` in a worker thread, within the request timeout (then 504). A read stops its work at
        the deadline too (``deadline.py``: SQLite interrupted, the pipeline stopped between stages);
        a ``write`` (delete, rollback, upload) runs to its end, so nothing is left half done."""
        timeout = self.limits.request_timeout_seconds
        work = functools.partial(fn, *args, **kwargs)
        if not write:
            work = functools.partial(run_within, timeout, work)
        try:
            with anyio.fail_after(timeout):
                return await anyio.to_thread.run_sync(work, limiter=self.limiter, abandon_on_cancel=True)
        except (TimeoutError, DeadlineExceeded):
            raise ApiError(
                504,
                f"the request took longer than server.request_timeout_seconds ({timeout:g} s)",
                kind="timeout",
            ) from None

    def authorize(self, credentials: HTTPAuthorizationCredentials | None) -> None:
        if self.keys is None:
            return
        if credentials is None:
            raise ApiError(
                401,
                "missing API key: send the header 'Authorization: Bearer <key>'",
                field="Authorization",
                kind="unauthorized",
            )
        if not self.keys.check(credentials.credentials):
            raise ApiError(401, "wrong API key", field="Authorization", kind="unauthorized")

    def warm_up(self) -> None:
        """One query before the first request: loads the model, the live index and the tokenizer."""
        self.engine.embedder.embed_queries(["warm up"])
        with contextlib.suppress(NoIndexError):
            self.engine.query("warm up", top_k=1)

    def load_live(self) -> None:
        """Load the version a write just made live, on the writer's thread, so that no query waits
        for it (a version written by another process is loaded by the first query that sees it)."""
        with contextlib.suppress(NoIndexError):
            self.engine.indices.get()

    def ingest_job(
        self,
        paths: list[Path] | StagedUploads,
        *,
        collection: str,
        metadata: Any,
        dry_run: bool,
        request: dict[str, Any],
    ) -> dict[str, Any]:
        """Ingest ``paths`` as a job. Uploads (``StagedUploads``) are moved into ``uploads/`` by the
        job itself, one job at a time, and settled after it: ``uploads/`` keeps the file of each
        name the store holds (``server/uploads.py``)."""

        def work(progress: Callable[[str, int, int], None]) -> dict[str, Any]:
            staged = paths if isinstance(paths, StagedUploads) else None
            targets = staged.place() if staged is not None else paths
            try:
                report = self.engine.ingest(
                    targets, collection=collection, dry_run=dry_run, progress=progress, metadata=metadata
                )
            finally:
                if staged is not None:
                    staged.settle(self.engine.store.document_hashes() if self.engine.store.exists else {})
            self.load_live()
            return report.to_dict()

        return self.jobs.submit("ingest", work, request=request)


def exclusive(service: Service, fn: Callable[..., T], *args: Any) -> T:
    with service.jobs.exclusive(wait=False):
        return fn(*args)


def delete(service: Service, shown: str) -> Any:
    """Delete the document ``shown`` names: a path as listed (relative to the ingested root) or a
    stored path (its leading '/' may be missing: a URL path drops it)."""
    stored = set(service.engine.deletable_paths())  # after a rollback, also files only newer versions hold
    root = service.engine.ingested_root()
    candidates = (shown, "/" + shown.lstrip("/"), stored_path(shown, root))
    path = next((c for c in candidates if c in stored), None)
    if path is None:
        raise ApiError(404, f"path: no document {shown!r} in the store", field="path", kind="not_found")
    build = exclusive(service, service.engine.delete, [path])
    service.load_live()
    uploads = (service.settings.data_dir / UPLOADS).resolve()
    if Path(path).resolve().is_relative_to(uploads):  # an uploaded file goes with its document
        Path(path).unlink(missing_ok=True)
    return build
