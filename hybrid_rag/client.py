"""A Python client for ``hybrid-rag serve``, on httpx, with the engine's method names.

>>> client = Client("http://127.0.0.1:8000", api_key="...")  # doctest: +SKIP
>>> client.query("how are ties broken?", top_k=3)["results"][0]["path"]  # doctest: +SKIP

Answers are the JSON shapes of the CLI's ``--json``. An error answer raises ``ServerError``; when the
server names one of the engine's error types, the raised error is also that type (``InputError``,
``NoIndexError`` ...), so code written against ``Engine`` catches the same errors.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from hybrid_rag import errors
from hybrid_rag.errors import HybridRagError


class ServerError(HybridRagError):
    """An error answer: ``status``, ``kind`` (the error type), ``field`` (the bad field, if any)."""

    def __init__(self, message: str, *, status: int, kind: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.field = status, kind, field


_TYPED: dict[str, type[ServerError]] = {}


def _error_type(kind: str) -> type[ServerError]:
    """``ServerError``, also the engine's error class when ``kind`` names one."""
    engine_type = getattr(errors, kind, None)
    if not (isinstance(engine_type, type) and issubclass(engine_type, HybridRagError)):
        return ServerError
    if kind not in _TYPED:
        _TYPED[kind] = type(kind, (ServerError, engine_type), {"__init__": ServerError.__init__})
    return _TYPED[kind]


class Client:
    """The HTTP API of one server; ``api_key`` is sent as a bearer token."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise errors.RemoteServiceError(f"{self._http.base_url}{path}: {exc}") from None
        if response.is_success:
            return response.json()
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            error = {"type": "http_error", "message": response.text[:200]}
        kind = str(error.get("type", "http_error"))
        message = f"{response.status_code} {error.get('message', '')}"
        raise _error_type(kind)(message, status=response.status_code, kind=kind, field=error.get("field"))

    @staticmethod
    def _query_body(text: str, top_k: int | None, mode: str | None, filters: Any, features: Any) -> dict:
        body = {"query": text, "top_k": top_k, "mode": mode, "filters": filters, "features": features}
        return {k: v for k, v in body.items() if v is not None}

    # -- the engine's methods ------------------------------------------------------------------

    def query(
        self,
        text: str,
        *,
        top_k: int | None = None,
        mode: str | None = None,
        filters: Any = None,
        features: Mapping[str, bool] | None = None,
        group: str | None = None,
        units_per_file: int | None = None,
    ) -> dict[str, Any]:
        """Ranked chunks (``hybrid-rag query --json``); ``group="file"``: ranked files too (``files``)."""
        body = self._query_body(text, top_k, mode, filters, features)
        grouping = {"group": group, "units_per_file": units_per_file}
        body.update({k: v for k, v in grouping.items() if v is not None})
        return self._call("POST", "/v1/query", json=body)

    def context(self, text: str, *, max_tokens: int | None = None, **kwargs: Any) -> dict[str, Any]:
        """Cited, budgeted context (``hybrid-rag context --json``); ``kwargs`` as for ``query``, and
        ``edges`` ("off" or "signatures": ``context.edges``)."""
        body = self._query_body(
            text, kwargs.get("top_k"), kwargs.get("mode"), kwargs.get("filters"), kwargs.get("features")
        )
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if kwargs.get("edges") is not None:
            body["edges"] = kwargs["edges"]
        return self._call("POST", "/v1/context", json=body)

    def ask(
        self, text: str, *, max_tokens: int | None = None, answer_tokens: int = 512, **kwargs: Any
    ) -> dict:
        """The context and, with a generator configured on the server, the answer."""
        body = self._query_body(
            text, kwargs.get("top_k"), kwargs.get("mode"), kwargs.get("filters"), kwargs.get("features")
        )
        body["answer_tokens"] = answer_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if kwargs.get("edges") is not None:
            body["edges"] = kwargs["edges"]
        return self._call("POST", "/v1/ask", json=body)

    def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        collection: str = "default",
        metadata: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        wait: bool = True,
        timeout: float = 3600.0,
    ) -> dict[str, Any]:
        """Ingest paths on the server's disk (below its ingest roots) as a job; with ``wait`` the
        finished job (its ``result`` is ``ingest --json``), else the queued one."""
        body = {"paths": [str(p) for p in paths], "collection": collection, "dry_run": dry_run}
        if metadata is not None:
            body["metadata"] = dict(metadata)
        job = self._call("POST", "/v1/ingest", json=body)
        return self.wait(job["id"], timeout=timeout) if wait else job

    def upload(
        self,
        files: Sequence[str | Path],
        *,
        collection: str = "uploads",
        wait: bool = True,
        timeout: float = 3600.0,
    ) -> dict[str, Any]:
        """Send local files to the server and ingest them there as a job (``wait``: the finished job)."""
        with contextlib.ExitStack() as stack:
            parts = [("files", (Path(f).name, stack.enter_context(Path(f).open("rb")))) for f in files]
            job = self._call("POST", "/v1/documents", files=parts, data={"collection": collection})
        return self.wait(job["id"], timeout=timeout) if wait else job

    def job(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{job_id}")

    def wait(self, job_id: str, *, timeout: float = 3600.0, poll: float = 0.2) -> dict[str, Any]:
        """Poll a job until it is no longer queued or running; a failed job raises its error."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job["status"] not in ("queued", "running"):
                break
            if time.monotonic() > deadline:
                raise errors.RemoteServiceError(f"job {job_id} still {job['status']} after {timeout:g} s")
            time.sleep(poll)
        if job["status"] != "done":
            error = job.get("error") or {"status": 500, "type": "interrupted", "message": job["status"]}
            kind = str(error.get("type"))
            raise _error_type(kind)(
                f"job {job_id} {job['status']}: {error.get('message')}",
                status=int(error.get("status") or 500),
                kind=kind,
            )
        return job

    def documents(
        self,
        collection: str | None = None,
        *,
        offset: int = 0,
        limit: int = 100,
        absolute_paths: bool = False,
    ) -> dict[str, Any]:
        """Stored documents, paths relative to the answer's ``root`` (as results show them)."""
        params: dict[str, Any] = {"offset": offset, "limit": limit, "absolute_paths": absolute_paths}
        if collection is not None:
            params["collection"] = collection
        return self._call("GET", "/v1/documents", params=params)

    def delete(self, path: str) -> dict[str, Any]:
        """Remove one document by its path (as ``documents`` lists it, or as stored)."""
        return self._call("DELETE", "/v1/documents/" + quote(path.lstrip("/"), safe="/"))

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/v1/stats")

    def versions(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/versions")

    def rollback(self, version: int) -> dict[str, Any]:
        return self._call("POST", "/v1/rollback", json={"version": version})

    def ready(self) -> bool:
        """Whether the server can answer queries (model loaded, an index version live)."""
        return self._http.get("/readyz").status_code == 200
