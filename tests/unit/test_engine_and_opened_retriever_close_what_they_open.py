"""``with Engine(...) as engine:`` closes the engine's store when the block ends, on an error too;
``HybridRetriever.open(...)`` hands back a retriever that closes what it opened (``close()`` or a
``with`` block), so no Engine is left holding the store; and the package has one class named
``HybridRetriever``: the pipeline, with ``open``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_rag"


def _is_open(engine_or_retriever: object) -> bool:
    return engine_or_retriever.store._sessions is not None  # type: ignore[attr-defined]


def test_an_engine_is_a_context_manager_that_closes_its_store(settings: Settings, corpus: Path) -> None:
    with Engine(settings) as engine:
        engine.ingest([corpus])
        assert engine.query("circle area radius", top_k=1).chunks
        assert _is_open(engine)
    assert not _is_open(engine)


def test_an_engine_closes_its_store_when_the_block_raises(settings: Settings, corpus: Path) -> None:
    with pytest.raises(ZeroDivisionError), Engine(settings) as engine:
        engine.ingest([corpus])
        assert _is_open(engine)
        raise ZeroDivisionError
    assert not _is_open(engine)


def test_an_opened_retriever_closes_the_engine_it_opened(settings: Settings, corpus: Path) -> None:
    from hybrid_rag import HybridRetriever

    with Engine(settings) as engine:
        engine.ingest([corpus])
    with HybridRetriever.open(settings.data_dir) as retriever:
        hit = retriever.query("circle area radius", top_k=1).chunks[0]
        assert hit.chunk.path == "src/geometry.py" and _is_open(retriever)  # shown as opened
    assert not _is_open(retriever)
    again = HybridRetriever.open(settings.data_dir)
    assert again.query("soil drainage", top_k=1).chunks
    again.close()
    assert not _is_open(again)


def test_one_class_is_named_hybrid_retriever() -> None:
    import hybrid_rag
    from hybrid_rag.retrieval.retriever import HybridRetriever

    defined = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == "HybridRetriever"
    ]
    assert defined == ["retrieval/retriever.py"]
    assert hybrid_rag.HybridRetriever is HybridRetriever and callable(HybridRetriever.open)


def test_opening_without_the_engine_says_how(tmp_path: Path) -> None:
    """The pipeline never imports the engine: imported alone, ``open`` names the import it needs."""
    import subprocess
    import sys

    code = (
        "from hybrid_rag.retrieval.retriever import HybridRetriever\n"
        "from hybrid_rag.errors import ConfigError\n"
        "try:\n    HybridRetriever.open(sys.argv[1])\n"
        "except ConfigError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "from hybrid_rag import HybridRetriever" in done.stdout, done.stderr
