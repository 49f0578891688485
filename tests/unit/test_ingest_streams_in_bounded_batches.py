"""A streaming ingest commits bounded batches: the vectors held at once, the files written whole,
near-duplicates caught across batches, the same store as one big batch, a clean stop."""

from __future__ import annotations

import json
import random
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fake_settings import fake_settings

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.indices.versions import IndexVersions
from hybrid_rag.models.embedders import FAKE_WINDOW_WORDS, FakeEmbedder


class CountingEmbedder(FakeEmbedder):
    """The fake embedder, counting the window matrices it returned that are still alive."""

    def __init__(self) -> None:
        super().__init__(dimension=256, window_words=FAKE_WINDOW_WORDS)
        self.alive = 0
        self.most_alive = 0
        self.calls: list[int] = []

    def _gone(self) -> None:
        self.alive -= 1

    def embed_passage_windows(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = super().embed_passage_windows(texts)
        self.calls.append(len(texts))
        for matrix in out:
            weakref.finalize(matrix, self._gone)
        self.alive += len(out)
        self.most_alive = max(self.most_alive, self.alive)
        return out


def _words(rng: random.Random, n: int) -> str:
    return "\n".join(" ".join(f"w{rng.randrange(50_000)}" for _ in range(10)) for _ in range(n))


def _corpus(root: Path, files: int = 12, seed: int = 5) -> Path:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (root / f"doc{i:02d}.md").write_text(f"# document {i}\n\n{_words(rng, rng.randint(10, 60))}\n")
    return root


def _engine(tmp_path: Path, batch: int, name: str = "data", embedder: FakeEmbedder | None = None) -> Engine:
    settings = fake_settings(tmp_path / name, {"ingest.batch_chunks": batch})
    return Engine(settings, embedder=embedder)


def _rows(engine: Engine) -> list[tuple[str, int, int, str]]:
    return [(c.path, c.start_line, c.end_line, c.sha256) for c in engine.store.iter_chunks()]


def test_window_vectors_held_at_once_are_bounded_by_the_batch(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    engine = _engine(tmp_path, batch=4, embedder=embedder)
    report = engine.ingest([_corpus(tmp_path / "corpus")])
    engine.close()
    assert len(embedder.calls) >= 5 and max(embedder.calls) <= 4  # many batches, none larger
    assert sum(embedder.calls) == report.embedded
    assert embedder.most_alive <= 4  # a batch's vectors are gone once it is committed


def test_a_file_longer_than_a_batch_is_written_whole_in_one_commit(tmp_path: Path, monkeypatch) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "long.md").write_text(_words(random.Random(1), 400))  # many chunks
    engine = _engine(tmp_path, batch=3)
    commits: list[tuple[list[str], int]] = []
    write = engine.store.write_files

    def spy(files, **kwargs):
        commits.append(([fc.file.path for fc in files], len(kwargs.get("embeddings") or {})))
        return write(files, **kwargs)

    monkeypatch.setattr(engine.store, "write_files", spy)
    report = engine.ingest([corpus])
    assert report.chunks_written > 6
    assert [paths for paths, _ in commits if paths] == [[str((corpus / "long.md").resolve())]]
    assert len(commits) >= 3 and all(n <= 3 for _, n in commits)  # its vectors went in batch by batch
    engine.close()


def test_near_duplicates_are_caught_across_batches(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus", files=8)
    first = (corpus / "doc00.md").read_text()
    (corpus / "zz-copy.md").write_text(first.replace("# document 0", "# Document 0!"))  # a later batch
    engine = _engine(tmp_path, batch=2)
    report = engine.ingest([corpus])
    assert {Path(d.path).name for d in report.duplicates} == {"zz-copy.md"}
    assert all(not c.path.endswith("zz-copy.md") for c in engine.store.iter_chunks())
    engine.close()


def test_small_batches_store_what_one_big_batch_stores(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    (corpus / "again.md").write_text((corpus / "doc03.md").read_text())  # an exact duplicate
    stores = []
    for batch in (1, 5, 10_000):
        engine = _engine(tmp_path, batch=batch, name=f"data{batch}")
        report = engine.ingest([corpus])
        stores.append((_rows(engine), report.duplicates, report.embedded, report.chunks_written))
        engine.close()
    assert stores[0] == stores[1] == stores[2]


def test_stop_ends_the_ingest_after_the_current_batch_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    embedder = CountingEmbedder()
    engine = _engine(tmp_path, batch=4, embedder=embedder)
    report = engine.ingest([corpus], stop=lambda: len(embedder.calls) >= 2)
    assert report.interrupted and report.build is None
    assert 0 < report.files_written < len(report.plan.added) and report.embedded == sum(embedder.calls)
    assert IndexVersions(engine.settings.indices_dir).current() is None  # nothing went live
    assert {c.path for c in engine.store.iter_chunks()} == {d.path for d in engine.store.documents()}
    again = engine.ingest([corpus])
    assert not again.interrupted and again.build is not None
    assert again.embedded == sum(embedder.calls) - report.embedded  # nothing embedded twice
    assert len(again.plan.unchanged) == report.files_written
    reference = _engine(tmp_path, batch=10_000, name="reference")
    reference.ingest([corpus])
    assert _rows(engine) == _rows(reference)
    engine.close()
    reference.close()


def test_ingest_json_reports_stage_seconds_embedded_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path / "corpus", files=3)
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", str(corpus), "--json", "--quiet"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert {"chunk", "embed", "store", "index"} <= set(first["seconds"])
    assert first["embedded"] == first["chunks_written"] > 0 and first["reused"] == 0
    doc = corpus / "long.md"
    doc.write_text(_words(random.Random(2), 200))
    assert main(["--data-dir", data, "ingest", str(corpus), "--json", "--quiet"]) == 0
    capsys.readouterr()
    doc.write_text(doc.read_text() + "\none more closing line\n")
    assert main(["--data-dir", data, "ingest", str(corpus), "--json", "--quiet"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["changed"] == [str(doc.resolve())]
    assert 1 <= second["embedded"] < second["chunks_written"]  # the chunks with the new line
    assert second["reused"] == second["chunks_written"] - second["embedded"]
    assert second["interrupted"] is False
