"""MetadataStore: files written, replaced and deleted in one transaction; chunk ids never reused;
the embedding, signature and token caches; index version records; lazy open; schema checks."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import StoreError
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.store import FileChunks
from hybrid_rag.types import ChunkSpan, LoadedFile, SourceType


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _file(path: str, lines: list[str], *, meta: dict | None = None, per_chunk: int = 2) -> FileChunks:
    text = "\n".join(lines)
    spans = []
    for start in range(0, len(lines), per_chunk):
        piece = "\n".join(lines[start : start + per_chunk])
        end = min(start + per_chunk, len(lines))
        spans.append(ChunkSpan(piece, start + 1, end, len(piece.split()), _sha(piece)))
    source_type = SourceType.CODE if path.endswith(".py") else SourceType.TEXT
    language = "python" if path.endswith(".py") else "markdown"
    loaded = LoadedFile(path, text, _sha(text), len(text), 1.0, source_type, language, meta or {})
    return FileChunks(loaded, spans)


@pytest.fixture
def store(tmp_path: Path, store_url: str | None):
    """The store on SQLite, then on PostgreSQL."""
    s = MetadataStore(tmp_path / "data" / "store.sqlite3", url=store_url)
    yield s
    s.close()


def test_the_store_opens_on_first_use_not_when_constructed(tmp_path: Path) -> None:
    path = tmp_path / "data" / "store.sqlite3"
    s = MetadataStore(path)
    assert not s.exists and not path.parent.exists()
    assert s.chunk_count() == 0 and s.exists
    s.close()


def test_written_files_come_back_as_documents_and_chunks(store: MetadataStore) -> None:
    ids = store.write_files(
        [
            _file("/p/b.md", ["one two", "three", "four five six"], meta={"team": "search"}),
            _file("/p/a.py", ["x = 1"]),
        ],
        collection="docs",
    )
    assert len(ids) == 3 and ids == sorted(ids)
    docs = store.documents()
    assert [d.path for d in docs] == ["/p/a.py", "/p/b.md"]  # by path
    assert docs[1].collection == "docs" and docs[1].meta == {"team": "search"}
    assert docs[0].source_type is SourceType.CODE and docs[0].language == "python"
    assert store.documents(collection="other") == []
    chunks = store.chunks(ids)
    assert [(chunks[i].path, chunks[i].start_line, chunks[i].end_line) for i in ids] == [
        ("/p/b.md", 1, 2),
        ("/p/b.md", 3, 3),
        ("/p/a.py", 1, 1),
    ]
    assert chunks[ids[0]].text == "one two\nthree"
    assert store.counts() == {"documents": 2, "chunks": 3, "cached_embeddings": 0}
    assert store.document_hashes() == {d.path: d.sha256 for d in docs}
    assert [c.id for c in store.iter_chunks(batch_size=2)] == ids == store.all_chunk_ids().tolist()
    assert store.chunk_hashes() == {i: chunks[i].sha256 for i in ids}


def test_rewriting_a_file_replaces_its_chunks_and_ids_are_never_reused(store: MetadataStore) -> None:
    first = store.write_files([_file("/p/a.md", ["a", "b", "c", "d"])], collection="c")
    second = store.write_files([_file("/p/a.md", ["a", "b", "c changed"])], collection="c")
    assert min(second) > max(first)  # AUTOINCREMENT: a deleted id is never handed out again
    assert sorted(store.chunk_hashes()) == second and store.counts()["documents"] == 1
    assert store.chunks(first)[first[0]].text == "a\nb"  # the old revision stays readable by id
    store.write_files([], collection="c", delete_paths=["/p/a.md"])
    third = store.write_files([_file("/p/b.md", ["z"])], collection="c")
    assert min(third) > max(second) and store.chunk_count() == 1
    store.collect_garbage(store.generation())
    third_again = store.write_files([_file("/p/c.md", ["y"])], collection="c")
    assert min(third_again) > max(third)  # not even ids garbage-collected


def test_deleting_a_path_retires_its_document_and_chunks(store: MetadataStore) -> None:
    ids = store.write_files([_file("/p/a.md", ["a", "b"]), _file("/p/b.md", ["c"])], collection="c")
    store.write_files([], collection="c", delete_paths=["/p/a.md", "/p/never-stored.md"])
    assert [d.path for d in store.documents()] == ["/p/b.md"]
    assert list(store.chunk_hashes()) == [ids[-1]] and store.all_chunk_ids().tolist() == [ids[-1]]
    assert [c.id for c in store.iter_chunks()] == [ids[-1]] and store.chunk_count() == 1
    assert sorted(store.chunks(ids)) == ids  # retired, not dropped: an older index version reads it


def test_every_write_is_a_new_store_state_and_its_hashes_come_with_it(store: MetadataStore) -> None:
    assert store.generation() == 0
    ids = store.write_files([_file("/p/a.md", ["a"])], collection="c")
    store.write_files([], collection="c", delete_paths=["/p/none.md"])
    assert store.state_hashes() == (2, {ids[0]: _sha("a")})


def test_garbage_collection_drops_what_no_kept_state_reads(store: MetadataStore) -> None:
    old = store.write_files([_file("/p/a.md", ["a", "b"]), _file("/p/b.md", ["c"])], collection="c")
    shas = {c.sha256 for c in store.chunks(old).values()}
    store.put_embeddings("m", dict.fromkeys(shas, np.ones(3, dtype=np.float32)))
    state_1 = store.generation()
    new = store.write_files([_file("/p/a.md", ["a", "b2"])], collection="c")  # "a" lives on in a.md
    store.write_files([], collection="c", delete_paths=["/p/b.md"])
    before = store.old_revisions()
    assert before["documents"] == 2 and before["chunks"] == 2 and before["text_bytes"] == len("a\nb") + 1
    assert before["cached_embeddings"] == 2 and before["embedding_bytes"] == 2 * 12
    assert store.collect_garbage(state_1) == {"documents": 0, "chunks": 0, "cached_embeddings": 0}
    assert sorted(store.chunks(old)) == old  # a version built at state 1 still reads them
    gone = store.collect_garbage(store.generation())
    assert gone == {"documents": 2, "chunks": 2, "cached_embeddings": 2}
    assert store.chunks(old) == {} and sorted(store.chunks(new)) == new
    assert store.old_revisions() == dict.fromkeys(before, 0)
    assert store.cached_shas("m", shas) == set()


def test_the_embedding_cache_keeps_vectors_and_window_matrices_per_model(store: MetadataStore) -> None:
    vector = np.arange(4, dtype=np.float32)
    windows = np.arange(12, dtype=np.float32).reshape(3, 4)
    store.put_embeddings("m", {"s1": vector, "s2": windows})
    got = store.cached_windows("m", ["s1", "s2", "missing"])
    assert set(got) == {"s1", "s2"}
    assert got["s1"].shape == (1, 4) and np.array_equal(got["s1"][0], vector)
    assert np.array_equal(got["s2"], windows)
    assert store.cached_windows("other-model", ["s1"]) == {}
    assert store.cached_shas("m", ["s1", "x"]) == {"s1"}
    store.put_embeddings("m", {"s1": vector + 100})  # a sha already cached keeps its first vector
    assert np.array_equal(store.cached_windows("m", ["s1"])["s1"][0], vector)
    assert store.counts()["cached_embeddings"] == 2


def test_write_files_caches_embeddings_in_the_same_transaction(store: MetadataStore) -> None:
    fc = _file("/p/a.md", ["a b"])
    sha = fc.spans[0].sha256
    store.write_files([fc], collection="c", embeddings={sha: np.ones(3, dtype=np.float32)}, model="m")
    assert store.cached_shas("m", [sha]) == {sha}


def test_signatures_and_tokens_are_cached_by_sha(store: MetadataStore) -> None:
    store.put_signatures(4, {"s1": np.array([1, 2, 3, 2**63], dtype=np.uint64), "empty": None})
    got = store.cached_signatures(4, ["s1", "empty", "missing"])
    assert got["empty"] is None and got["s1"].tolist() == [1, 2, 3, 2**63] and "missing" not in got
    store.put_tokens("spacy", {"s1": ["get", "file", "name"]})
    assert store.cached_tokens("spacy", ["s1", "s2"]) == {"s1": ["get", "file", "name"]}
    assert store.cached_tokens("regex", ["s1"]) == {}


def test_index_versions_are_recorded_in_version_order(store: MetadataStore) -> None:
    store.record_index_version("bm25", 2, "h2", {"k1": 1.5}, "live")
    store.record_index_version("dense", 1, "h1", {"dimension": 384}, "superseded")
    versions = store.index_versions()
    assert [(v.name, v.version, v.source_hash, v.status) for v in versions] == [
        ("dense", 1, "h1", "superseded"),
        ("bm25", 2, "h2", "live"),
    ]
    assert versions[0].params == {"dimension": 384} and versions[1].built_at is not None


def test_chunk_meta_round_trips(store: MetadataStore) -> None:
    fc = _file("/p/a.md", ["a"])
    span = ChunkSpan("a", 1, 1, 1, _sha("a"), meta={"row": 7, "tags": ["x"]})
    [chunk_id] = store.write_files([FileChunks(fc.file, [span])], collection="c")
    assert store.chunks([chunk_id])[chunk_id].meta == {"row": 7, "tags": ["x"]}


def test_a_schema_2_store_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA_2)
    s = MetadataStore(path)
    assert [d.path for d in s.documents()] == ["/p/a.md"] and s.generation() == 0
    new = s.write_files([_file("/p/a.md", ["b"])], collection="c")
    assert s.chunk_hashes() == {new[0]: _sha("b")} and s.chunks([1])[1].text == "a"
    s.close()


_SCHEMA_2 = """
CREATE TABLE meta (key VARCHAR NOT NULL PRIMARY KEY, value VARCHAR NOT NULL);
INSERT INTO meta VALUES ('schema_version', '2');
CREATE TABLE documents (id INTEGER NOT NULL PRIMARY KEY, path VARCHAR NOT NULL,
  collection VARCHAR NOT NULL, sha256 VARCHAR(64) NOT NULL, size INTEGER NOT NULL,
  mtime FLOAT NOT NULL, source_type VARCHAR(8) NOT NULL, language VARCHAR NOT NULL,
  ingested_at DATETIME NOT NULL, meta TEXT);
CREATE UNIQUE INDEX ix_documents_path ON documents (path);
CREATE INDEX ix_documents_collection ON documents (collection);
CREATE TABLE chunks (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, document_id INTEGER NOT NULL
  REFERENCES documents (id) ON DELETE CASCADE, position INTEGER NOT NULL, start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, text TEXT NOT NULL, token_count INTEGER NOT NULL,
  sha256 VARCHAR(64) NOT NULL, meta TEXT);
INSERT INTO documents VALUES
  (1, '/p/a.md', 'c', 'x', 1, 1.0, 'text', 'markdown', '2026-01-01 00:00:00', NULL);
INSERT INTO chunks VALUES (1, 1, 0, 1, 1, 'a', 1, 'h', NULL);
CREATE TABLE embeddings (model VARCHAR NOT NULL, sha256 VARCHAR(64) NOT NULL, dimension INTEGER NOT NULL,
  vector BLOB NOT NULL, PRIMARY KEY (model, sha256));
"""


def test_a_store_of_another_schema_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    s = MetadataStore(path)
    s.chunk_count()
    s.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema 99"):
        MetadataStore(path).chunk_count()
