"""Fixtures of the framework retriever tests: an ingested fake-embedder store (tests/framework_corpus.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from framework_corpus import fake_settings, write_corpus

from hybrid_rag.engine import Engine


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ingested data dir (fake embedder) over FILES."""
    base = tmp_path_factory.mktemp("integrations")
    engine = Engine(fake_settings(base / "data"))
    engine.ingest([write_corpus(base / "corpus")])
    engine.close()
    return base / "data"


@pytest.fixture(scope="session")
def shared_engine(store_dir: Path) -> Iterator[Engine]:
    engine = Engine(fake_settings(store_dir))
    yield engine
    engine.close()
