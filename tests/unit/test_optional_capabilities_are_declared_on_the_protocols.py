"""The optional capabilities of embedders and indices are protocols (``hybrid_rag/protocols.py``)
that the stages ask by ``isinstance``, not attribute names looked up with ``getattr``; each backend
has exactly the capabilities it declares. ``scripts/typecheck.sh`` checks the same statically."""

from __future__ import annotations

import numpy as np

from hybrid_rag.indices.bm25 import BM25IndexManager
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.remote import RemoteEmbedder
from hybrid_rag.protocols import (
    DimensionLearner,
    Embedder,
    KeywordIndex,
    KnowsTerms,
    ModelChooser,
    OwnTokenizer,
    WindowedEmbedder,
)
from hybrid_rag.settings import BM25Settings, EmbeddingSettings
from hybrid_rag.store.embedding_cache import embed_windows


def test_each_embedder_has_the_capabilities_it_declares() -> None:
    fake = FakeEmbedder(dimension=16)
    remote = RemoteEmbedder(EmbeddingSettings(provider="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    assert isinstance(fake, Embedder) and isinstance(fake, WindowedEmbedder)
    assert not isinstance(fake, DimensionLearner) and not isinstance(fake, ModelChooser)
    assert isinstance(remote, DimensionLearner) and not isinstance(remote, WindowedEmbedder)
    remote.expect_dimension(7)
    assert remote.dimension == 7  # learnt from the index, no request to the (absent) server


def test_a_windowed_embedder_gives_windows_and_a_plain_one_a_row() -> None:
    class Plain:
        model_name, dimension = "plain", 4

        def embed_passages(self, texts):
            return np.ones((len(texts), 4), dtype=np.float32)

        def embed_queries(self, texts):
            return self.embed_passages(texts)

    assert [w.shape for w in embed_windows(Plain(), ["a", "b"])] == [(1, 4), (1, 4)]
    asked: list[list[str]] = []

    class Windowed(FakeEmbedder):
        def embed_passage_windows(self, texts):
            asked.append(list(texts))
            return [np.ones((3, 8), dtype=np.float32) for _ in texts]

    assert [w.shape for w in embed_windows(Windowed(dimension=8), ["a long text"])] == [(3, 8)]
    assert asked == [["a long text"]]


def test_the_bm25_index_owns_its_tokenizer_and_knows_its_terms() -> None:
    index = BM25IndexManager(BM25Settings(tokenizer="regex", stopwords="none"))
    index.build(np.array([1, 2]), ["circle area radius", "soil drainage"])
    assert isinstance(index, KeywordIndex) and isinstance(index, OwnTokenizer)
    assert isinstance(index, KnowsTerms)
    assert index.known_terms(["circle", "kite"]) == ["circle"]
