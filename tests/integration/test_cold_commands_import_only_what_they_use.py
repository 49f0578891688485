"""``import hybrid_rag`` and a bare ``hybrid-rag query`` import no heavy package they do not use:
no torch, transformers or sentence-transformers (the ONNX runtime needs none; spaCy's thinc and
bm25s's numba probes are hidden), no chromadb, sklearn, pymilvus, datasketch, server packages, and
no spaCy once an ingest has saved its tokenizer's rules (the query is split by the same rules in
Python). Each runs in a fresh interpreter, which reports ``sys.modules`` as it exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NEVER_FOR_A_QUERY = {
    "torch",
    "transformers",
    "sentence_transformers",
    "chromadb",
    "sklearn",
    "pymilvus",
    "datasketch",
    "numba",
    "ranx",
    "fastapi",
    "uvicorn",
    "mcp",
    "matplotlib",
    "onnxruntime",  # the fake embedder runs no model
}
RUNNER = """
import atexit, json, sys
def report():
    names = sorted({m.split('.')[0] for m in sys.modules})
    sys.stderr.write("MODULES " + json.dumps(names) + "\\n")
atexit.register(report)
from hybrid_rag.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HYBRID_RAG_EMBEDDING__MODEL": "fake"}
    env.update(extra)
    return env


def _modules(stderr: str) -> set[str]:
    line = next(line for line in stderr.splitlines() if line.startswith("MODULES "))
    return set(json.loads(line[len("MODULES ") :]))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    root = tmp_path_factory.mktemp("cold")
    (root / "docs").mkdir()
    for name in ("fusion.py", "rerank.py"):
        (root / "docs" / name).write_text((ROOT / "hybrid_rag" / "retrieval" / name).read_text())
    cmd = [sys.executable, "-c", RUNNER, "--data-dir", str(root / "data"), "ingest", str(root / "docs")]
    cache = {"HYBRID_RAG_MODEL_CACHE": str(model_cache)}
    subprocess.run(cmd, env=_env(**cache), check=True, capture_output=True, text=True, timeout=300)
    return root / "data"


def _query(store: Path, **env: str) -> set[str]:
    cmd = [sys.executable, "-c", RUNNER, "--data-dir", str(store), "query", "how are ties broken in fusion"]
    done = subprocess.run(cmd, env=_env(**env), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return _modules(done.stderr)


def test_import_hybrid_rag_loads_only_the_package() -> None:
    code = (
        "import sys, hybrid_rag; "
        "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True
    )
    third_party = set(json.loads(done.stdout.replace("'", '"'))) - {"hybrid_rag", "__main__"}
    assert not {m for m in third_party if not m.startswith("_")}, third_party


def test_a_bare_query_imports_no_model_runtime_and_no_unused_backend(store: Path, model_cache: Path) -> None:
    assert list(model_cache.glob("spacy-*-en-tokenizer-*.json"))  # the ingest saved spaCy's rules
    loaded = _query(store, HYBRID_RAG_MODEL_CACHE=str(model_cache))
    assert not loaded & NEVER_FOR_A_QUERY, sorted(loaded & NEVER_FOR_A_QUERY)
    assert {"faiss", "bm25s"} <= loaded  # what the default pipeline does use
    assert "spacy" not in loaded and "thinc" not in loaded


def test_without_saved_rules_a_query_loads_spacy_itself(store: Path, tmp_path: Path) -> None:
    loaded = _query(store, HYBRID_RAG_MODEL_CACHE=str(tmp_path / "empty"))
    assert "spacy" in loaded
    assert not loaded & NEVER_FOR_A_QUERY


def test_spacy_loads_only_for_the_spacy_tokenizer(tmp_path: Path) -> None:
    root = tmp_path
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("Reciprocal rank fusion breaks ties by chunk id.\n")
    regex = {"HYBRID_RAG_BM25__TOKENIZER": "regex"}
    cmd = [sys.executable, "-c", RUNNER, "--data-dir", str(root / "data"), "ingest", str(root / "docs")]
    subprocess.run(cmd, env=_env(**regex), check=True, capture_output=True, text=True, timeout=300)
    loaded = _query(root / "data", **regex)
    assert "spacy" not in loaded and "thinc" not in loaded
    assert not loaded & NEVER_FOR_A_QUERY


def test_status_imports_no_index_package(store: Path) -> None:
    """``status`` walks the disk and reads the store: no BM25 or Faiss package is loaded."""
    cmd = [sys.executable, "-c", RUNNER, "--data-dir", str(store), "status"]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = _modules(done.stderr)
    assert not loaded & (NEVER_FOR_A_QUERY | {"bm25s", "scipy"}), sorted(loaded & {"bm25s", "scipy"})
