"""Prometheus metrics (``prometheus-client``): requests and latency per route, latency per pipeline
stage (from each query's trace), the live index version and the chunk count.

Each app has its own registry. With several workers, ``serve`` sets ``PROMETHEUS_MULTIPROC_DIR``
before they start and ``/metrics`` aggregates every worker's files (prometheus-client's
multiprocess mode).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from hybrid_rag.types import QueryResult

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
Scope = MutableMapping[str, Any]
App = Callable[[Scope, Any, Any], Awaitable[None]]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "hybrid_rag_http_requests", "HTTP requests answered", ("method", "route", "status"), registry=r
        )
        self.latency = Histogram(
            "hybrid_rag_http_request_duration_seconds",
            "HTTP request latency",
            ("method", "route"),
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.stages = Histogram(
            "hybrid_rag_stage_duration_seconds",
            "pipeline stage latency, from each query's trace",
            ("stage",),
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.version = Gauge(
            "hybrid_rag_index_version",
            "the live index version",
            registry=r,
            multiprocess_mode="livemostrecent",
        )
        self.chunks = Gauge(
            "hybrid_rag_chunks", "chunks in the store", registry=r, multiprocess_mode="livemostrecent"
        )
        self.documents = Gauge(
            "hybrid_rag_documents", "documents in the store", registry=r, multiprocess_mode="livemostrecent"
        )

    def observe_result(self, result: QueryResult) -> None:
        for timing in result.trace.timings:
            self.stages.labels(timing.stage).observe(timing.seconds)

    def render(self, *, version: int | None, chunks: int, documents: int) -> tuple[bytes, str]:
        self.version.set(version or 0)
        self.chunks.set(chunks)
        self.documents.set(documents)
        if os.environ.get(MULTIPROC_ENV):
            registry = CollectorRegistry()
            MultiProcessCollector(registry)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def middleware(self, app: App) -> App:
        """ASGI middleware counting every HTTP request by its route template (``/v1/jobs/{job_id}``,
        so ids do not become labels); a path no route matched counts as ``unmatched``."""

        async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            status = 500
            start = time.perf_counter()

            async def tracked(message: MutableMapping[str, Any]) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                await send(message)

            try:
                await app(scope, receive, tracked)
            finally:
                route = getattr(scope.get("route"), "path", "unmatched")
                method = scope.get("method", "?")
                self.requests.labels(method, route, str(status)).inc()
                self.latency.labels(method, route).observe(time.perf_counter() - start)

        return wrapped
