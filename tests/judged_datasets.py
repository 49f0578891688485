"""Where the judged BEIR datasets are: ``HYBRID_RAG_DATASETS``, else ``../shared/datasets`` beside the
repository (as the benchmarks read them). A test that needs one skips, naming the path, when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]


def datasets_dir() -> Path:
    return Path(os.environ.get("HYBRID_RAG_DATASETS") or REPOSITORY.parent / "shared" / "datasets")


def judged_dataset(name: str) -> Path:
    """The folder of dataset ``name``; the calling test is skipped when it is not there."""
    folder = datasets_dir() / name
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip(f"dataset {name} not found in {folder.parent} (set HYBRID_RAG_DATASETS)")
    return folder
