"""Cached vectors carry a CRC-32 (schema 4): one damaged in the store (64 flipped bytes that
SQLite's integrity_check does not see) is never served again. `rebuild` and an ingest embed it
again and say how many; a row from before checksums is checked by its norm; a dense index file
whose vectors are not unit length is a CorruptIndexError on load (issue 25.6)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.settings import Settings
from hybrid_rag.store.embedding_cache import embed_windows
from hybrid_rag.store.schema import SCHEMA_VERSION
from hybrid_rag.vectors import bad_rows


def _damage(store: Path, *, drop_checksum: bool = False, offset: int = 64) -> str:
    """Flip 64 bytes of one cached vector in place; returns its sha256."""
    db = sqlite3.connect(store)
    sha, blob = db.execute("SELECT sha256, vector FROM embeddings ORDER BY sha256 LIMIT 1").fetchone()
    data = bytearray(blob)
    for i in range(offset, offset + 64):
        data[i] ^= 0x5A
    db.execute("UPDATE embeddings SET vector = ? WHERE sha256 = ?", (bytes(data), sha))
    if drop_checksum:
        db.execute("UPDATE embeddings SET checksum = NULL")
    db.commit()
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # SQLite sees nothing wrong
    db.close()
    return sha


def _windows_of(engine: Engine, sha: str) -> np.ndarray:
    """The live dense index's window vectors of the chunk with text hash ``sha`` (maxp scoring)."""
    chunk = next(c for c in engine.store.iter_chunks() if c.sha256 == sha)
    return engine.indices.get().dense.windows(chunk.id)


def test_unit_rows_and_zero_rows_pass_the_norm_check() -> None:
    rows = np.array([[0.6, 0.8], [0.0, 0.0], [3.0, 4.0], [np.nan, 1.0], [1e30, 0.0]], dtype=np.float32)
    assert bad_rows(rows).tolist() == [False, False, True, True, True]


def test_rebuild_embeds_a_damaged_vector_again_and_says_how_many(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.ingest([corpus])
    engine.close()
    sha = _damage(engine.settings.store_path)
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    assert main(["--data-dir", str(engine.settings.data_dir), "rebuild"]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 cached vector(s) failed their checksum and were embedded again" in err
    text = next(c.text for c in engine.store.iter_chunks() if c.sha256 == sha)
    fresh = embed_windows(engine.embedder, [text])[0]
    assert np.allclose(_windows_of(engine, sha), fresh, atol=1e-6)
    assert engine.store.cached_windows(engine.embedder.model_name, [sha])  # the row is whole again
    assert engine.rebuild().repaired == 0


def test_a_reingest_does_not_reuse_a_damaged_vector(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    sha = _damage(engine.settings.store_path)
    path = next(c.path for c in engine.store.iter_chunks() if c.sha256 == sha)
    moved = corpus / "moved" / Path(path).name
    moved.parent.mkdir()
    Path(path).rename(moved)  # the same text under another path: a cache hit by chunk hash
    report = engine.ingest([corpus])
    assert report.build is not None and report.build.repaired == 1
    assert not bad_rows(_windows_of(engine, sha)).any()


def test_a_row_from_before_checksums_is_checked_by_its_norm(engine: Engine, corpus: Path) -> None:
    engine.ingest([corpus])
    store = engine.settings.store_path
    engine.close()
    db = sqlite3.connect(store)
    db.execute("UPDATE embeddings SET checksum = NULL")  # as a store from before schema 4 holds them
    db.commit()
    db.close()
    assert engine.rebuild().repaired == 0  # intact old rows are used as they are
    engine.close()
    _damage(store, drop_checksum=True)
    assert engine.rebuild().repaired == 1


def test_a_schema_3_store_gains_the_checksum_column(settings: Settings, corpus: Path) -> None:
    engine = Engine(settings)
    engine.ingest([corpus])
    engine.close()
    db = sqlite3.connect(settings.store_path)
    # the chunks' vectors and the question bank's (indices/question_bank.py), all from before schema 4
    old_rows = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    db.execute("ALTER TABLE embeddings DROP COLUMN checksum")
    db.execute("ALTER TABLE chunks DROP COLUMN duplicate_of")  # schema 5's
    db.execute("ALTER TABLE documents DROP COLUMN created")
    db.execute("DROP INDEX ix_chunks_lang")  # schema 6's
    db.execute("ALTER TABLE chunks DROP COLUMN lang")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    engine = Engine(settings)
    assert engine.query("soil").chunks
    assert engine.rebuild().repaired == 0
    db = sqlite3.connect(settings.store_path)
    version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert version == str(SCHEMA_VERSION)
    assert db.execute("SELECT COUNT(*) FROM embeddings WHERE checksum IS NULL").fetchone()[0] == old_rows
    assert db.execute("SELECT COUNT(*) FROM embeddings WHERE model NOT LIKE '%#query'").fetchone()[0] == 2
    db.close()
    engine.close()


def test_a_dense_index_file_with_a_vector_not_unit_length_is_corrupt(tmp_path: Path) -> None:
    index = FaissVectorIndex(4, "fake")
    vectors = np.array([[1, 0, 0, 0], [0, 7.49, 0, 0]], dtype=np.float32)  # saved with its checksum
    index.add(np.array([1, 2], dtype=np.int64), vectors)
    index.save(tmp_path)
    with pytest.raises(CorruptIndexError, match="1 vector.* not unit length"):
        FaissVectorIndex.load(tmp_path, model_name="fake", dimension=4)
