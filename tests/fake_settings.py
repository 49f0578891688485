"""The settings most tests run under: a data dir and the deterministic fake embedder (no model
loads, vectors from hashed words). One expression for what 58 places spelled out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hybrid_rag.settings import Settings


def fake_settings(data_dir: str | Path, overrides: Mapping[str, Any] | None = None) -> Settings:
    """``Settings`` with ``paths.data_dir`` at ``data_dir``, ``embedding.model: fake`` and ``overrides``
    (dotted keys, as ``Settings.with_overrides`` takes them)."""
    return Settings().with_overrides(
        {"paths.data_dir": str(data_dir), "embedding.model": "fake", **(overrides or {})}
    )
