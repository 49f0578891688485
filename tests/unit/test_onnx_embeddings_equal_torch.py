"""The ONNX runtime's MiniLM gives the torch (sentence-transformers) vectors: cosine >= 0.9999 on
1,000 texts, windows and all, which is why both runtimes share one model name and one index."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.models.embedders import SentenceTransformerEmbedder
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.onnx_embedder import OnnxEmbedder
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings

ROOT = Path(__file__).resolve().parents[2]
COSINE_FLOOR = 0.9999


def thousand_texts() -> list[str]:
    """1,000 deterministic texts from the repository's own prose and code: paragraphs of every
    length (some past 256 word pieces, so windows are compared too), a few degenerate ones."""
    texts: list[str] = ["", "   ", "?!", "a"]
    for path in sorted([*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), *ROOT.glob("hybrid_rag/**/*.py")]):
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            if block.strip():  # every 40th whole (windows), the rest cut short (CPU time)
                texts.append(block if len(texts) % 40 == 0 else block[:400])
            if len(texts) >= 1000:
                return texts
    return texts


@pytest.fixture(scope="module")
def embedders(tmp_path_factory: pytest.TempPathFactory) -> tuple[OnnxEmbedder, SentenceTransformerEmbedder]:
    pytest.importorskip("sentence_transformers", reason="the torch reference needs the [torch] extra")
    onnx = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, runtime="onnx"))
    torch = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, runtime="torch"))
    assert isinstance(onnx, OnnxEmbedder)
    assert type(torch) is SentenceTransformerEmbedder
    return onnx, torch


@pytest.mark.slow
def test_minilm_passages_and_queries_match_torch_on_1000_texts(embedders) -> None:
    onnx, torch = embedders
    texts = thousand_texts()
    assert len(texts) == 1000
    windows_onnx, owners_onnx = onnx.passage_windows(texts)
    windows_torch, owners_torch = torch.passage_windows(texts)
    assert (windows_onnx, owners_onnx) == (windows_torch, owners_torch)
    assert len(windows_onnx) > len(texts)  # some passages were long enough to window
    passages = np.sum(onnx.embed_passages(texts) * torch.embed_passages(texts), axis=1)
    queries = np.sum(onnx.embed_queries(texts[:200]) * torch.embed_queries(texts[:200]), axis=1)
    assert passages.min() >= COSINE_FLOOR, f"lowest passage cosine {passages.min():.6f}"
    assert queries.min() >= COSINE_FLOOR, f"lowest query cosine {queries.min():.6f}"


@pytest.mark.slow
def test_both_runtimes_share_the_model_name_dimension_and_token_counts(embedders) -> None:
    onnx, torch = embedders
    assert onnx.model_name == torch.model_name == "sentence-transformers/all-MiniLM-L6-v2#defs2"
    assert onnx.dimension == torch.dimension == 384
    assert onnx.max_seq_length == torch.max_seq_length == 256
    for text in ["", "getFileName() returns the résumé", "word " * 300]:
        assert onnx.tokenizer_count(text) == torch.tokenizer_count(text)
