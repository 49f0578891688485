"""``embedding.model: auto`` samples the first ingest's own listing: a tree nested 1,500 levels
deep is ingested (no recursive walk before the ingest's own), and what the ingest excludes is
not sampled."""

from __future__ import annotations

from pathlib import Path

from deep_tree import make_deep, remove_deep, write_deep

from hybrid_rag.engine import Engine
from hybrid_rag.models.auto import AutoEmbedder
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import EmbeddingSettings, Settings

RUSSIAN = "Чтобы сбросить пароль, откройте настройки учётной записи и нажмите «Забыли пароль»."
ENGLISH = "To reset your password, open the account settings and press Forgot password."


def _engine(tmp_path: Path, made: list[str]) -> Engine:
    def make(settings: EmbeddingSettings) -> FakeEmbedder:
        made.append(settings.model)
        return FakeEmbedder(16, model_name=settings.model)

    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path / "data")})
    return Engine(settings, embedder=AutoEmbedder(EmbeddingSettings(model="auto"), make))


def test_a_1500_deep_tree_is_ingested_and_its_text_chooses_the_model(tmp_path: Path) -> None:
    root = tmp_path / "deep"
    bottom = make_deep(root, 1500)
    made: list[str] = []
    engine = _engine(tmp_path, made)
    try:
        write_deep(bottom, "bottom.md", RUSSIAN + "\n")
        (root / "top.md").write_text(RUSSIAN + "\n", encoding="utf-8")
        report = engine.ingest([root])
        assert len(report.plan.added) == 2 and report.build is not None
        assert made == ["multilingual-e5-small"]
        assert engine.embedder.choice.startswith("embedding.model auto: multilingual-e5-small")
    finally:
        engine.close()
        remove_deep(root)  # before pytest's clean-up, which would recurse


def test_what_the_ingest_excludes_is_not_sampled(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "ignored").mkdir()
    for i in range(5):  # Russian only where the ingest never reads
        (root / "node_modules" / "pkg" / f"{i}.md").write_text(RUSSIAN, encoding="utf-8")
        (root / "ignored" / f"{i}.md").write_text(RUSSIAN, encoding="utf-8")
    (root / ".gitignore").write_text("ignored/\n", encoding="utf-8")
    (root / "README.md").write_text(ENGLISH, encoding="utf-8")
    made: list[str] = []
    engine = _engine(tmp_path, made)
    try:
        report = engine.ingest([root])
        assert sorted(Path(p).name for p in report.plan.added) == [".gitignore", "README.md"]
        assert made == ["all-MiniLM-L6-v2"]
        assert "mostly English" in engine.embedder.choice
    finally:
        engine.close()


def test_a_zip_members_text_is_sampled(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(3):
            z.writestr(f"notes/{i}.md", RUSSIAN)
    made: list[str] = []
    engine = _engine(tmp_path, made)
    try:
        engine.ingest([archive])
        assert made == ["multilingual-e5-small"]
    finally:
        engine.close()
