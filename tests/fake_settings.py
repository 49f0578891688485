"""The settings most tests run under: a data dir and the deterministic fake embedder (no model
loads, vectors from hashed words). One expression for what 58 places spelled out; a script a test
runs in a child process imports it too (:func:`child_env` puts this folder on its path)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hybrid_rag.settings import Settings

TESTS = Path(__file__).resolve().parent
FAKE = {"embedding.model": "fake"}  # the one override that makes any settings the fake embedder's


def fake_settings(
    data_dir: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    base: Settings | None = None,
) -> Settings:
    """``base`` (default ``Settings()``) with ``paths.data_dir`` at ``data_dir`` (None: left as it
    is), ``embedding.model: fake`` and ``overrides`` (dotted keys, as ``Settings.with_overrides``
    takes them)."""
    data = {} if data_dir is None else {"paths.data_dir": str(data_dir)}
    return (base or Settings()).with_overrides({**data, **FAKE, **(overrides or {})})


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment for a child Python that imports the package and this folder's
    helpers (``from fake_settings import fake_settings``): the repository and ``tests/`` first on
    ``PYTHONPATH``, output unbuffered, and ``extra``."""
    paths = [str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]
    path = os.pathsep.join(p for p in paths if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **extra}
