"""A small repository whose vendored and generated files are never embedded
(``ingest.embed_never``), served live: what the not-dense tests of ``tests/server/`` read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from live_server import KEY, LiveServer, server_settings

from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys

NEVER = {"ingest.embed_never": ["vendored", "generated"]}
LINE = "never embedded (ingest.embed_never): generated 1, vendored 1"


def write_tree(repo: Path) -> None:
    for rel, text in {
        "src/pool.py": "def pool_size():\n    return 'the pool holds connections'\n",
        "vendor/six.py": "def vendored_helper():\n    return 'a bundled copy of six'\n",
        "src/generated/models.py": "def generated_pool_message():\n    return 'pool connections message'\n",
    }.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)


@contextmanager
def serving(tmp_path: Path) -> Iterator[LiveServer]:
    """The tree ingested with ``NEVER`` into a data dir under ``tmp_path``, served with ``KEY``."""
    repo = tmp_path / "repo"
    write_tree(repo)
    settings = server_settings(tmp_path, **NEVER)
    engine = Engine(settings)
    engine.ingest([repo])
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    try:
        yield server
    finally:
        server.stop()
