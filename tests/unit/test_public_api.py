"""The public Python API: the names the README shows import from the package, lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hybrid_rag
from hybrid_rag.errors import NoIndexError


def test_public_names_import_from_the_package() -> None:
    from hybrid_rag import ContextBuilder, HybridRetriever, MetadataStore, Settings, load_settings

    assert callable(HybridRetriever.open)
    assert {ContextBuilder.__name__, MetadataStore.__name__, Settings.__name__} == {
        "ContextBuilder",
        "MetadataStore",
        "Settings",
    }
    assert load_settings(environ={}).retrieval.top_k == Settings().retrieval.top_k
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        hybrid_rag.Nope  # noqa: B018


def test_importing_the_package_loads_no_heavy_library() -> None:
    heavy = "('torch', 'faiss', 'sqlalchemy')"
    code = f"import sys, hybrid_rag; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_open_gives_a_ready_retriever_over_an_ingested_data_dir(tmp_path, monkeypatch) -> None:
    from hybrid_rag import Engine, HybridRetriever, load_settings

    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = tmp_path / "data"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "soil.md").write_text("# Soil\n\nClay soil holds water; sand drains fast.\n")
    engine = Engine(load_settings(data_dir=data))
    engine.ingest([docs])
    engine.close()
    retriever = HybridRetriever.open(data)
    result = retriever.query("which soil drains fast?", top_k=1)
    assert result.chunks[0].path.endswith("soil.md")
    with pytest.raises(NoIndexError):
        HybridRetriever.open(tmp_path / "empty").query("anything")
