"""``embedding.quantize: auto`` (opt-in; the default stays fp32, ``none``): MiniLM chosen by
``embedding.model: auto`` runs the
int8-mixed graph on a fresh data dir (RESULTS.md#ingest-levers); a data dir whose index was built
with fp32 vectors keeps fp32 and says how to re-embed, so its vectors are never mixed with the
mixed graph's and an upgrade forces no rebuild; an explicit precision is what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import IndexMismatchError
from hybrid_rag.models.auto import AutoEmbedder
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.precision import precision_of
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings, Settings

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _data_dir_built_by(tmp_path: Path, model_name: str) -> Settings:
    """A data dir whose live index records ``model_name`` (a fake embedder of MiniLM's dimension
    under that name: the index as the real model at that precision would have left it)."""
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    (docs / "a.md").write_text("To reset your password, open the account settings.", encoding="utf-8")
    settings = Settings().with_overrides(
        {"paths.data_dir": str(tmp_path / "data"), "embedding.quantize": "auto"}
    )
    engine = Engine(settings, embedder=FakeEmbedder(384, model_name=model_name))
    try:
        engine.ingest([docs])
    finally:
        engine.close()
    return settings


def _auto(settings: Settings, **embedding: str) -> AutoEmbedder:
    auto = make_embedder(settings.embedding.model_copy(update=embedding))
    assert isinstance(auto, AutoEmbedder)
    auto.bind_data_dir(settings.indices_dir, lambda: {"en": 1})
    return auto


def test_the_default_is_fp32_and_auto_gives_a_fresh_data_dir_the_int8_mixed_graph(tmp_path: Path) -> None:
    assert EmbeddingSettings().quantize == "none" and Settings().embedding.quantize == "none"
    plain = _auto(Settings().with_overrides({"paths.data_dir": str(tmp_path / "plain")}))
    plain.prepare_texts(["To reset your password, open the account settings."])
    assert plain.model_name == f"{MINILM}#defs2"
    auto = _auto(
        Settings().with_overrides({"paths.data_dir": str(tmp_path / "fresh"), "embedding.quantize": "auto"})
    )
    auto.prepare_texts(["To reset your password, open the account settings."])
    assert auto.model_name == f"{MINILM}#int8-mixed#defs2"
    assert (
        auto.choice
        == f"embedding.model auto: {DEFAULT_EMBEDDING_MODEL}: the text is mostly English (en 100%)"
    )


def test_an_fp32_index_keeps_fp32_and_says_how_to_re_embed(tmp_path: Path) -> None:
    settings = _data_dir_built_by(tmp_path, f"{MINILM}#defs2")
    auto = _auto(settings)
    assert auto.model_name == f"{MINILM}#defs2"  # the index's vectors: nothing mixed, no rebuild
    assert auto.choice is not None and "fp32, as this data dir's index was built" in auto.choice
    assert "HYBRID_RAG_EMBEDDING__QUANTIZE=int8-mixed hybrid-rag rebuild" in auto.choice


def test_an_int8_mixed_or_int8_index_keeps_its_precision_without_a_note(tmp_path: Path) -> None:
    for name in (f"{MINILM}#int8-mixed#defs2", f"{MINILM}#int8#defs2"):
        settings = _data_dir_built_by(tmp_path / precision_of(name), name)
        auto = _auto(settings)
        assert auto.model_name == name
        assert (
            auto.choice == f"embedding.model auto: {MINILM}: the model this data dir's index was built with"
        )


def test_an_explicit_precision_is_what_it_says(tmp_path: Path) -> None:
    fresh = Settings().with_overrides(
        {"paths.data_dir": str(tmp_path / "fresh"), "embedding.quantize": "auto"}
    )
    assert _auto(fresh, quantize="none").model_name == f"{MINILM}#defs2"
    fp32 = _data_dir_built_by(tmp_path, f"{MINILM}#defs2")
    assert _auto(fp32, quantize="int8-mixed").model_name == f"{MINILM}#int8-mixed#defs2"
    # a model named in the config, not chosen by auto: auto is fp32 there, as before
    named = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL))
    assert named.model_name == f"{MINILM}#defs2"


def test_an_engine_over_an_fp32_index_answers_with_the_fp32_vectors(tmp_path: Path) -> None:
    """``auto`` opens an fp32 data dir as it was built (a plain int8-mixed there would have the
    dense index refuse the mismatch)."""
    settings = _data_dir_built_by(tmp_path, f"{MINILM}#defs2")
    engine = Engine(settings)
    try:
        assert engine.embedder.model_name == f"{MINILM}#defs2"
        engine.indices.get()  # loads the live version's dense index against the embedder's name
    finally:
        engine.close()
    forced = Engine(settings.with_overrides({"embedding.quantize": "int8-mixed"}))
    try:
        with pytest.raises(IndexMismatchError, match="rebuild"):
            forced.indices.get()
    finally:
        forced.close()


def test_precision_is_read_from_a_vector_sets_name() -> None:
    assert [precision_of(f"{MINILM}{s}") for s in ("#defs2", "#int8#defs2", "#int8-mixed#defs2")] == [
        "none",
        "int8",
        "int8-mixed",
    ]
