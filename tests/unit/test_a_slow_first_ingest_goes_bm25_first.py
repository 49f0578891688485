"""BM25 goes live first for every ingest whose embedding is estimated to take more than a few
seconds (``ingest.bm25_first_min_seconds``), not only above ``ingest.bm25_first_min_bytes``: the
estimate is the chunks the files will make times the model's cost per chunk on this machine now
(``ingest/bm25_first.py``, ``models/cost.py``). And ``hybrid-rag ingest`` says how far it is on
stderr when stderr is not a terminal, without ``--progress``."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.ingest.bm25_first import estimate_embedding
from hybrid_rag.models.cost import SECONDS_PER_CHUNK, UNKNOWN_SECONDS_PER_CHUNK, model_seconds_per_chunk
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings
from hybrid_rag.types import LoadedFile, SourceType


class SlowFakeEmbedder(FakeEmbedder):
    """The fake embedder, costed like a slow model (it is not slow: only the estimate reads it)."""

    seconds_per_chunk = 3.0


def _small_folder(root: Path) -> Path:
    """Three small Markdown files: far under a megabyte, a handful of chunks."""
    root.mkdir()
    for i in range(3):
        (root / f"note{i}.md").write_text(f"# Note {i}\n\nThe rotor wing number {i} stalls early.\n")
    return root


def _ingest(tmp_path: Path, embedder: FakeEmbedder, **overrides: object) -> tuple[list[int], list[str]]:
    settings = Settings().with_overrides(
        {"paths.data_dir": str(tmp_path / "data"), "ingest.publish_every_seconds": 0.0001, **overrides}
    )
    engine = Engine(settings, embedder=embedder)
    stages: list[str] = []
    try:
        engine.ingest(
            [_small_folder(tmp_path / "notes")], progress=lambda stage, done, total: stages.append(stage)
        )
        return [v["version"] for v in engine.versions()], stages
    finally:
        engine.close()


def test_a_small_folder_a_slow_model_would_take_seconds_on_goes_bm25_first(tmp_path: Path) -> None:
    versions, stages = _ingest(tmp_path, SlowFakeEmbedder(16))
    assert "searchable" in stages  # a BM25-only version went live before the vectors
    assert versions[-1] >= 2  # that one (v1), then the complete one


def test_a_small_folder_a_fast_model_embeds_at_once_is_one_version(tmp_path: Path) -> None:
    versions, stages = _ingest(tmp_path, FakeEmbedder(16))
    assert versions == [1] and "searchable" not in stages


def test_the_threshold_is_a_setting(tmp_path: Path) -> None:
    versions, stages = _ingest(tmp_path, SlowFakeEmbedder(16), **{"ingest.bm25_first_min_seconds": 10**6})
    assert versions == [1] and "searchable" not in stages


def test_the_estimate_is_chunks_times_the_cost_and_grows_with_the_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def loaded(size: int, name: str) -> LoadedFile:
        return LoadedFile(name, "", "0" * 64, size, 0.0, SourceType.TEXT, "markdown")

    files = [loaded(100, "a.md"), loaded(3200 * 3 + 1, "b.md")]  # 1 chunk, then 4 of 800 tokens
    monkeypatch.setattr("os.getloadavg", lambda: (0.5, 0.5, 0.5))
    idle = estimate_embedding(files, SlowFakeEmbedder(16), max_tokens=800)
    assert idle.chunks == 5 and idle.seconds == pytest.approx(15.0)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (12.0, 12.0, 12.0))  # six times the cores
    assert estimate_embedding(files, SlowFakeEmbedder(16), max_tokens=800).seconds == pytest.approx(90.0)
    assert estimate_embedding(files, FakeEmbedder(16), max_tokens=800).seconds == 0.0


def test_a_models_cost_is_found_by_its_name() -> None:
    class Named:
        def __init__(self, name: str) -> None:
            self.model_name = name

    assert (
        model_seconds_per_chunk(Named("sentence-transformers/all-MiniLM-L6-v2#defs2"))
        == (SECONDS_PER_CHUNK["all-minilm-l6-v2"])
    )
    assert (
        model_seconds_per_chunk(Named("multilingual-e5-small")) == SECONDS_PER_CHUNK["multilingual-e5-small"]
    )
    assert model_seconds_per_chunk(Named("some-served-model")) == UNKNOWN_SECONDS_PER_CHUNK


def test_ingest_progress_reaches_stderr_off_a_terminal_without_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    folder = _small_folder(tmp_path / "notes")
    assert main(["--data-dir", str(tmp_path / "data"), "ingest", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "hybrid-rag: files 3/3 (100%)" in err.splitlines()
    assert "\x1b" not in err and "\r" not in err
    assert main(["--data-dir", str(tmp_path / "quiet"), "ingest", "--quiet", str(folder)]) == 0
    assert capsys.readouterr().err == ""


def test_off_a_terminal_a_silent_stage_still_prints_a_line_every_few_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A batch of slow embeddings reports nothing for minutes: the last line comes again."""
    import time

    from hybrid_rag.progress import Bars

    bars = Bars(True, every=0.2)
    try:
        bars("chunks", 64, 220)
        time.sleep(1.0)
    finally:
        bars.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "hybrid-rag: chunks 64/220 (29%)"
    again = [
        line for line in lines[1:] if line.startswith("hybrid-rag: chunks 64/220 (29%), still working (")
    ]
    assert len(again) >= 2 and len(again) == len(lines) - 1
