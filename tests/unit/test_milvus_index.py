"""The Milvus indices beyond the shared contracts (``tests/conformance/``, where milvus-lite passes
the VectorIndex and KeywordIndex suites): HNSW recall, stored windows and pooled vectors, reopening
a collection by name, refusing other settings, the term encoding, an unreachable server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="the [milvus] extra (pymilvus, milvus-lite) is not installed")

from hybrid_rag.errors import CorruptIndexError, IndexMismatchError, RemoteServiceError
from hybrid_rag.indices.milvus.bm25 import MilvusKeywordIndex
from hybrid_rag.indices.milvus.client import connect, encode_terms, forget_clients
from hybrid_rag.indices.milvus.dense import MilvusVectorIndex
from hybrid_rag.settings import BM25Settings, MilvusSettings
from hybrid_rag.vectors import pool_windows

DIM = 24
MODEL = "test-model"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    yield connect(MilvusSettings(uri="milvus-index.db"), tmp_path_factory.mktemp("milvus"))
    forget_clients()


def _name() -> str:
    return "t_" + uuid.uuid4().hex[:12]


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _dense(client: object, scoring: str = "maxp", index_type: str = "FLAT") -> MilvusVectorIndex:
    settings = MilvusSettings(index_type=index_type)  # type: ignore[arg-type]
    return MilvusVectorIndex.create(
        client, _name(), settings, dimension=DIM, model_name=MODEL, scoring=scoring
    )


def test_hnsw_recall_at_10_on_2000_vectors(client: object) -> None:
    rng = np.random.default_rng(5)
    x, queries = _unit(rng, 2000), _unit(rng, 30)
    ids = np.arange(1, 2001, dtype=np.int64)
    index = _dense(client, scoring="pooled", index_type="HNSW")
    index.add(ids, x)
    found = [
        len({h.id for h in index.search(q, 10)} & set(ids[np.argsort(-(x @ q))[:10]].tolist()))
        for q in queries
    ]
    assert sum(found) / (10 * len(queries)) >= 0.95


def test_windows_are_stored_and_pooled_on_demand(client: object) -> None:
    rng = np.random.default_rng(11)
    mats = [_unit(rng, int(n)) for n in rng.integers(1, 5, size=20)]
    ids = np.arange(100, 120, dtype=np.int64)
    maxp, pooled = _dense(client), _dense(client, scoring="pooled")
    maxp.add(ids, mats)
    pooled.add(ids, mats)
    np.testing.assert_allclose(maxp.windows(int(ids[4])), mats[4], atol=1e-7)
    want = np.stack([pool_windows(m) for m in mats[:5]])
    np.testing.assert_allclose(maxp.vectors(ids[:5]), want, atol=1e-6)
    np.testing.assert_allclose(pooled.vectors(ids[:5]), want, atol=1e-6)
    assert len(pooled.windows(int(ids[4]))) == 1  # one pooled row a chunk
    with pytest.raises(KeyError, match="not in the vector index"):
        maxp.vectors(np.array([ids[0], 7]))


def test_a_collection_reopens_by_name_and_a_dropped_one_is_named(client: object, tmp_path: Path) -> None:
    index = _dense(client)
    index.add(np.array([1, 2]), [np.eye(1, DIM, dtype=np.float32), np.eye(1, DIM, k=1, dtype=np.float32)])
    index.save(tmp_path)
    settings = MilvusSettings(index_type="FLAT")
    reopened = MilvusVectorIndex.open(client, index.name, settings, model_name=MODEL, dimension=DIM)
    assert reopened.search(np.eye(1, DIM, dtype=np.float32)[0], 1)[0].id == 1
    with pytest.raises(CorruptIndexError, match="t_absent is gone"):
        MilvusVectorIndex.open(client, "t_absent", settings, model_name=MODEL, dimension=DIM)
    keyword = MilvusKeywordIndex.create(client, _name(), MilvusSettings(), BM25Settings(tokenizer="regex"))
    with pytest.raises(CorruptIndexError, match="is a milvus-bm25, not a milvus-dense"):
        MilvusVectorIndex.open(client, keyword.name, settings, model_name=MODEL, dimension=DIM)


def test_the_keyword_index_refuses_other_bm25_settings(client: object, tmp_path: Path) -> None:
    settings = BM25Settings(tokenizer="regex")
    index = MilvusKeywordIndex.create(client, _name(), MilvusSettings(), settings)
    index.build(np.array([1, 2, 3]), ["alpha beta", "gamma", "delta"])
    index.save(tmp_path)
    assert MilvusKeywordIndex.load(tmp_path, client, MilvusSettings(), settings).search("alpha", 1)[0].id == 1
    with pytest.raises(IndexMismatchError, match="bm25.k1"):
        MilvusKeywordIndex.load(tmp_path, client, MilvusSettings(), settings.model_copy(update={"k1": 0.9}))


def test_terms_are_encoded_one_to_one_for_the_standard_analyzer() -> None:
    terms = ["plain", "get_file_name", "e.g.", "c++", "café", "_private", "3.14", "x"]
    words = encode_terms(terms).split(" ")
    assert words[:2] == ["plain", "get_file_name"] and len(set(words)) == len(terms)
    assert all(w.replace("_", "a").isascii() and w.replace("_", "a").isalnum() for w in words)


def test_an_unreachable_server_is_one_line_naming_it(tmp_path: Path) -> None:
    settings = MilvusSettings(uri="http://127.0.0.1:9", timeout_seconds=2)
    with pytest.raises(
        RemoteServiceError, match=r"cannot reach Milvus at http://127\.0\.0\.1:9 \(milvus\.uri\)"
    ) as err:
        connect(settings, tmp_path)
    assert "\n" not in str(err.value)
