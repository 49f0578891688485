"""Fixtures of the server tests: a live server over the ingested shared corpus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from live_server import KEY, OTHER_KEY, LiveServer, server_settings

from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys


@pytest.fixture
def live(tmp_path: Path, corpus: Path) -> Iterator[LiveServer]:
    """A server over the ingested corpus, keys KEY and OTHER_KEY, ingest root = the corpus folder."""
    settings = server_settings(
        tmp_path, **{"server.ingest_roots": [str(corpus)], "server.max_body_bytes": 8000}
    )
    engine = Engine(settings)
    engine.ingest([corpus])
    server = LiveServer(settings, ApiKeys.of((KEY, OTHER_KEY)), engine)
    yield server
    server.stop()
