"""Shared fixtures: a small mixed corpus on disk and an Engine with the deterministic fake embedder."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pg_server import STORES, fresh_database

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

PY_SOURCE = textwrap.dedent(
    '''\
    """Geometry helpers."""

    import math


    def circle_area(radius: float) -> float:
        """Area of a circle of the given radius."""
        return math.pi * radius * radius


    def parse_config_file(path: str) -> dict:
        """Read a key=value configuration file into a dictionary."""
        result = {}
        with open(path) as handle:
            for line in handle:
                key, _, value = line.partition("=")
                result[key.strip()] = value.strip()
        return result
    '''
)

MD_SOURCE = textwrap.dedent(
    """\
    # Gardening notes

    Tomatoes need full sun and regular watering. Pinch out the side shoots
    so that the plant puts its energy into the fruit.

    ## Soil

    Compost improves drainage in heavy clay soil and keeps moisture in sandy soil.
    Earthworms thrive when the soil is rich in organic matter.
    """
)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "geometry.py").write_text(PY_SOURCE)
    (root / "docs" / "garden.md").write_text(MD_SOURCE)
    return root


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings().with_overrides({"paths.data_dir": str(tmp_path / "data"), "embedding.model": "fake"})


@pytest.fixture
def engine(settings: Settings):
    eng = Engine(settings)
    yield eng
    eng.close()


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest):
    """None (the SQLite file in the data dir), then the URL of a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield None
        return
    with fresh_database() as url:
        yield url
