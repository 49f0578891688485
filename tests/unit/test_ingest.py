from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import IndexMismatchError, InputError
from hybrid_rag.indices.versions import IndexVersions
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.vectors import pool_windows


def _index_ids(engine: Engine) -> set[int]:
    live = engine.indices.get()
    assert set(live.dense.ids().tolist()) == set(live.bm25.ids().tolist())
    return set(live.dense.ids().tolist())


def test_ingest_writes_store_and_both_indices_with_the_same_ids(engine, corpus):
    report = engine.ingest([corpus])
    assert len(report.plan.added) == 2 and report.build is not None
    ids = set(engine.store.all_chunk_ids().tolist())
    assert ids and ids == _index_ids(engine)
    docs = {Path(d.path).name: d for d in engine.store.documents()}
    assert docs["geometry.py"].source_type.value == "code" and docs["garden.md"].source_type.value == "text"


def test_reingest_unchanged_changes_nothing(engine, corpus):
    engine.ingest([corpus])
    version = IndexVersions(engine.settings.indices_dir).current()
    report = engine.ingest([corpus])
    assert not report.plan.has_changes and report.build is None
    assert len(report.plan.unchanged) == 2
    assert IndexVersions(engine.settings.indices_dir).current() == version


def test_changed_file_is_rechunked_and_only_new_text_is_embedded(engine, corpus):
    engine.ingest([corpus])
    before = engine.store.chunk_hashes()
    garden = corpus / "docs" / "garden.md"
    garden.write_text(garden.read_text() + "\nMulch keeps weeds down in summer.\n")
    report = engine.ingest([corpus])
    assert report.plan.changed == (str(garden.resolve()),)
    assert report.embedded == 1  # the new garden chunk; geometry.py untouched
    after = engine.store.chunk_hashes()
    geometry_ids = [i for i, c in engine.store.chunks(before).items() if c.path.endswith("geometry.py")]
    assert geometry_ids and all(i in after for i in geometry_ids)
    assert set(after) == _index_ids(engine)


def test_deleted_file_leaves_store_and_indices(engine, corpus):
    engine.ingest([corpus])
    (corpus / "src" / "geometry.py").unlink()
    report = engine.ingest([corpus])
    assert len(report.plan.deleted) == 1
    assert all(not c.path.endswith("geometry.py") for c in engine.store.iter_chunks())
    assert set(engine.store.all_chunk_ids().tolist()) == _index_ids(engine)


def test_dry_run_reports_and_writes_nothing(engine, corpus):
    report = engine.ingest([corpus], dry_run=True)
    assert report.dry_run and len(report.plan.added) == 2
    assert (
        not engine.settings.indices_dir.exists()
        or IndexVersions(engine.settings.indices_dir).current() is None
    )
    assert engine.store.counts()["documents"] == 0


def test_failure_half_way_leaves_the_store_as_it_was(engine, corpus, monkeypatch):
    engine.ingest([corpus])
    counts = engine.store.counts()
    hashes = engine.store.chunk_hashes()
    (corpus / "docs" / "new.md").write_text("A brand new page about beekeeping and honey.\n")

    def broken(*_args, **_kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(engine.ingestor.builder, "build", broken)
    monkeypatch.setattr(engine.store, "_put_embeddings", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        engine.ingest([corpus])
    assert engine.store.counts() == counts
    assert engine.store.chunk_hashes() == hashes


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_missing_path_or_empty_folder_is_a_clear_error(engine, tmp_path, make):
    path = tmp_path / "nothing-here"
    if make == "empty":
        path.mkdir()
    with pytest.raises(InputError, match="does not exist|no text or source files"):
        engine.ingest([path])


def test_folder_of_only_binary_files_names_the_reason(engine, tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "blob.dat").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(InputError, match="binary"):
        engine.ingest([folder])


def test_index_vectors_come_from_the_embedding_cache(engine, corpus):
    engine.ingest([corpus])
    live = engine.indices.get()
    chunk = next(engine.store.iter_chunks())
    cached = pool_windows(
        engine.store.cached_windows(engine.embedder.model_name, [chunk.sha256])[chunk.sha256]
    )
    np.testing.assert_allclose(live.dense.vectors(np.array([chunk.id]))[0], cached, rtol=1e-6)


def test_an_index_built_with_another_model_is_refused_with_the_fix(engine, corpus, settings):
    engine.ingest([corpus])
    other = Engine(settings, embedder=FakeEmbedder(dimension=32, model_name="other-model"))
    with pytest.raises(IndexMismatchError, match="other-model") as err:
        other.query("soil")
    assert "hybrid-rag rebuild" in str(err.value)
    other.close()


def test_zip_is_ingested_member_by_member_and_a_bad_zip_is_refused_whole(engine, tmp_path):
    import zipfile

    archive = tmp_path / "docs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("guide/intro.md", "# Intro\n\nBeekeeping starts with a strong colony.\n")
        zf.writestr("src/hive.py", "def inspect_hive(frames):\n    return [f for f in frames if f]\n")
    report = engine.ingest([archive])
    assert len(report.plan.added) == 2
    paths = {d.path for d in engine.store.documents()}
    assert paths == {
        f"{archive.resolve().as_posix()}/guide/intro.md",
        f"{archive.resolve().as_posix()}/src/hive.py",
    }
    top = engine.query("beekeeping colony", top_k=1, absolute_paths=True).chunks[0]
    assert top.citation.endswith("docs.zip/guide/intro.md:1-3")
    assert engine.query("beekeeping colony", top_k=1).chunks[0].citation == "guide/intro.md:1-3"

    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("ok.md", "fine\n")
        zf.writestr("../escape.md", "outside\n")
    counts = engine.store.counts()
    with pytest.raises(InputError, match="refusing zip archive"):
        engine.ingest([evil])
    assert engine.store.counts() == counts  # nothing half-ingested


def test_near_duplicate_chunks_are_stored_once_and_reported(engine, tmp_path):
    folder = tmp_path / "dups"
    folder.mkdir()
    text = "\n".join(
        f"line {i}: the rotor blade tip vortex interacts with the following blade" for i in range(40)
    )
    (folder / "a.md").write_text(text + "\n")
    (folder / "b.md").write_text(text + "\n")  # the same text in another file
    (folder / "c.md").write_text("something else entirely about soil and compost\n")
    report = engine.ingest([folder])
    assert len(report.duplicates) == 1 and report.duplicates[0].path.endswith("b.md")
    assert engine.store.counts()["chunks"] == 2
    # re-ingesting a changed a.md is not a duplicate of its own old version
    (folder / "a.md").write_text(text + "\nline 40: and a new closing remark\n")
    report = engine.ingest([folder])
    assert report.chunks_written == 1 and not report.duplicates


def test_chroma_backend_serves_the_same_pipeline(settings, corpus):
    chroma = Engine(settings.with_overrides({"index.dense_backend": "chroma"}))
    try:
        chroma.ingest([corpus])
        result = chroma.query("parse config file into a dictionary", mode="dense", top_k=1)
        assert result.chunks[0].path.endswith("geometry.py")
    finally:
        chroma.close()
    faiss_engine = Engine(settings)  # same data dir, other backend: refused with the fix
    with pytest.raises(IndexMismatchError, match="dense_backend"):
        faiss_engine.query("soil")
    faiss_engine.close()


def test_a_rebuild_reuses_cached_bm25_tokens(engine, corpus, monkeypatch):
    from hybrid_rag.lang.tokenize import Tokenizer

    engine.ingest([corpus])
    batches: list[int] = []
    original = Tokenizer.tokenize_many

    def counting(self, texts, langs=None):
        batches.append(len(texts))
        return original(self, texts, langs)

    monkeypatch.setattr(Tokenizer, "tokenize_many", counting)
    report = engine.rebuild()
    assert report.chunks > 1
    assert batches and max(batches) == 1  # only the validation's one-line probe queries
