"""BM25IndexManager beyond the shared contract (``tests/conformance/test_keyword_index_contract.py``):
idf clamping, bm25+ floors, identifier parts, top-k selection, min_df, stop words, bad settings,
the manifest, checksums and damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.errors import ConfigError, CorruptIndexError, IndexMismatchError
from hybrid_rag.indices.bm25 import MANIFEST_FILE, MERGE_KEYS, SUBDIR, BM25IndexManager, top_k_hits
from hybrid_rag.settings import BM25Settings

CORPUS = [
    "Faiss builds an exact inner product index over dense vectors.",
    "BM25 ranks documents by term frequency and inverse document frequency.",
    "The tokenizer splits identifiers such as getFileName into get, file and name.",
    "Reciprocal rank fusion combines the dense ranking with the BM25 ranking.",
    "A cross encoder reranks the top candidates for the query.",
    "def get_file_name(path): return os.path.basename(path)",
    "class HTTPServer: serves files over HTTP on a local port.",
    "Chunks are stored in SQLite with their document path and line numbers.",
    "The embedding model turns each chunk into a normalised dense vector.",
    "Maximal marginal relevance diversifies the final list of chunks.",
    "Vectors are removed from the Faiss index by chunk id after a document changes.",
    "The inverse document frequency of a rare term is high; of a common term low.",
    "Query expansion adds terms from the top documents to the query.",
    "The BM25 index is rebuilt whenever the corpus changes because its statistics are global.",
    "def read_file(path): with open(path) as handle: return handle.read()",
    "Term frequency saturates: the tenth occurrence of a term adds little to the score.",
    "Document length normalisation penalises long documents in BM25.",
    "A dense retriever finds paraphrases that share no term with the query.",
    "Sparse retrieval with BM25 finds exact identifiers and rare terms.",
    "The context builder cites each chunk by path and line range.",
    "Hybrid retrieval runs the dense and the sparse retriever and fuses their rankings.",
    "The file loader skips binary files and files ignored by gitignore.",
    "Each index version is written to a new folder and the pointer is switched atomically.",
    "The SQLite store keeps documents, chunks and their hashes.",
    "A query about file names should find getFileName and get_file_name.",
    "Stemming maps running and runs to run so that more documents match.",
    "Stop words such as the and of are removed before indexing.",
    "Long documents are split into chunks of five hundred to eight hundred tokens.",
    "Reranking with a cross encoder is slower than BM25 but more precise.",
    "Scores from different retrievers live on different scales, so fusion uses ranks.",
]
IDS = np.arange(len(CORPUS), dtype=np.int64) * 10 + 3  # sparse, like SQLite row ids after deletions
QUERIES = [
    "dense vectors",
    "inverse document frequency",
    "get file name",
    "BM25 ranking fusion",
    "cross encoder rerank",
    "chunks path line",
    "sqlite documents",
    "term frequency document length",
    "query terms",
    "index rebuilt corpus changes",
    "retrieval",
]


def _manager(**overrides: object) -> BM25IndexManager:
    settings = BM25Settings(**{"tokenizer": "regex", **overrides})  # type: ignore[arg-type]
    manager = BM25IndexManager(settings)
    manager.build(IDS, CORPUS)
    return manager


def test_robertson_gives_terms_in_most_documents_no_weight() -> None:
    docs = ["common rare", "common", "common", "common other"]
    manager = BM25IndexManager(BM25Settings(tokenizer="regex", variant="robertson"))
    manager.build(np.arange(4), docs)
    assert manager.search("common", 10) == []  # df 4 of 4: idf clamped to 0, zero scores dropped
    assert [h.id for h in manager.search("common rare", 10)] == [0]


def test_bm25_plus_floor_alone_is_no_match() -> None:
    manager = _manager(variant="bm25+")
    hits = manager.search("sqlite", 30)
    assert {h.id for h in hits} == {IDS[7], IDS[23]}


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_identifier_parts_match_plain_words(backend: str) -> None:
    variant = "lucene" if backend == "bm25s" else "robertson"
    manager = _manager(backend=backend, variant=variant, stopwords="none")
    top = [h.id for h in manager.search("get file name", 3)]
    assert set(top) == {IDS[2], IDS[5], IDS[24]}


def test_top_k_hits_equals_a_full_sort() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 60))
        ids = rng.permutation(1000)[:n].astype(np.int64)
        scores = rng.integers(0, 5, size=n).astype(np.float32)  # many ties
        keep = rng.random(n) < 0.7
        k = int(rng.integers(1, n + 2))
        order = sorted(np.flatnonzero(keep), key=lambda i: (-scores[i], ids[i]))[:k]
        assert [h.id for h in top_k_hits(ids, scores, keep, k)] == ids[order].tolist()


def test_min_df_drops_rare_terms() -> None:
    plain = _manager(bm25_min_df=1)
    pruned = _manager(bm25_min_df=2)
    assert [h.id for h in plain.search("gitignore", 5)] == [IDS[21]]  # "gitignore" is in one document
    assert pruned.search("gitignore", 5) == []
    assert sorted(h.id for h in pruned.search("gitignore sqlite", 5)) == [IDS[7], IDS[23]]
    assert len(pruned) == len(plain) == len(CORPUS)  # documents stay, terms go


def test_degenerate_cases_give_empty_results(tmp_path: Path) -> None:
    manager = _manager()
    assert manager.search("dense", 0) == []
    assert manager.search("dense", -1) == []
    assert manager.search("", 5) == []
    assert manager.search("   ", 5) == []
    assert manager.search("the of and", 5) == []  # only stop words
    assert manager.search("xylophone", 5) == []  # unknown term
    assert manager.search("dense", 5, allowed_ids=np.empty(0, dtype=np.int64)) == []
    empty = BM25IndexManager(BM25Settings(tokenizer="regex"))
    assert len(empty) == 0 and empty.search("dense", 5) == []
    empty.build(np.empty(0, dtype=np.int64), [])
    assert len(empty) == 0 and empty.search("dense", 5) == []
    blank = BM25IndexManager(BM25Settings(tokenizer="regex"))
    blank.build(np.array([4, 8]), ["", "the !!"])  # documents without a single term
    assert len(blank) == 2 and blank.search("the", 5) == []
    blank.save(tmp_path)
    loaded = BM25IndexManager.load(tmp_path, blank.settings)
    assert len(loaded) == 2 and np.array_equal(loaded.ids(), [4, 8])


def test_bad_input_is_refused() -> None:
    manager = BM25IndexManager(BM25Settings())
    with pytest.raises(ValueError, match="duplicate chunk ids"):
        manager.build(np.array([1, 1]), ["a", "b"])
    with pytest.raises(ValueError, match="2 ids for 1 texts"):
        manager.build(np.array([1, 2]), ["a"])
    with pytest.raises(ConfigError, match="not implemented by rank_bm25"):
        BM25IndexManager(BM25Settings(backend="rank_bm25", variant="lucene"))


@pytest.mark.parametrize(
    ("backend", "variant"),
    [("bm25s", "lucene"), ("bm25s", "bm25l"), ("rank_bm25", "robertson"), ("rank_bm25", "bm25+")],
)
def test_save_load_round_trip(tmp_path: Path, backend: str, variant: str) -> None:
    manager = _manager(backend=backend, variant=variant, stemmer="english")
    manager.save(tmp_path)
    manager.save(tmp_path)  # saving again replaces the folder
    loaded = BM25IndexManager.load(tmp_path, manager.settings)
    assert np.array_equal(loaded.ids(), manager.ids())
    for query in QUERIES:
        assert loaded.search(query, 10) == manager.search(query, 10)
        assert loaded.search(query, 10, IDS[::3]) == manager.search(query, 10, IDS[::3])
    manifest = json.loads((tmp_path / SUBDIR / MANIFEST_FILE).read_text())
    assert manifest["backend"] == backend and manifest["count"] == len(CORPUS)
    assert manifest["params"] == manager.settings.model_dump(mode="json", exclude=set(MERGE_KEYS))
    assert set(manifest["files"]) == {p.name for p in (tmp_path / SUBDIR).iterdir()} - {MANIFEST_FILE}
    assert not any(p.suffix == ".pkl" for p in (tmp_path / SUBDIR).iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == [SUBDIR]  # no temporary folders left


def test_spacy_tokenizer_round_trip(tmp_path: Path) -> None:
    manager = BM25IndexManager(BM25Settings())  # the defaults: bm25s, lucene, spaCy, stop words
    manager.build(IDS, CORPUS)
    assert [h.id for h in manager.search("getFileName", 2)] == [IDS[2], IDS[24]]
    manager.save(tmp_path)
    assert BM25IndexManager.load(tmp_path, BM25Settings()).search("BM25", 5) == manager.search("BM25", 5)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"k1": 1.2}, "bm25.k1=1.5"),
        ({"stemmer": "english"}, "bm25.stemmer='none'"),
        (
            {"tokenizer": "spacy", "split_identifiers": False},
            "bm25.split_identifiers=True, bm25.tokenizer='regex'",
        ),
        ({"backend": "rank_bm25", "variant": "robertson"}, "bm25.backend='bm25s', bm25.variant='lucene'"),
    ],
)
def test_load_refuses_other_settings(tmp_path: Path, changes: dict[str, object], named: str) -> None:
    manager = _manager()
    manager.save(tmp_path)
    other = manager.settings.model_copy(update=changes)
    with pytest.raises(IndexMismatchError, match="run `hybrid-rag rebuild`") as err:
        BM25IndexManager.load(tmp_path, other)
    assert named in str(err.value)


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_corrupt_or_missing_files_are_detected(tmp_path: Path, backend: str) -> None:
    variant = "lucene" if backend == "bm25s" else "robertson"
    manager = _manager(backend=backend, variant=variant)
    manager.save(tmp_path)
    folder = tmp_path / SUBDIR
    target = next(folder.glob("seg-*.npz")) if backend == "bm25s" else folder / "tokens.jsonl"
    raw = bytearray(target.read_bytes())
    raw[-3] ^= 0x01
    target.write_bytes(bytes(raw))
    with pytest.raises(CorruptIndexError, match=f"fails its checksum: .*{target.name}"):
        BM25IndexManager.load(tmp_path, manager.settings)
    manager.save(tmp_path)
    missing = target if backend == "bm25s" else folder / "ids.npy"
    missing.unlink()
    with pytest.raises(CorruptIndexError, match=f"file missing: .*{missing.name}"):
        BM25IndexManager.load(tmp_path, manager.settings)
    (folder / MANIFEST_FILE).write_text("[1, 2")
    with pytest.raises(CorruptIndexError, match="manifest unreadable"):
        BM25IndexManager.load(tmp_path, manager.settings)
    (folder / MANIFEST_FILE).unlink()
    with pytest.raises(CorruptIndexError, match="manifest missing"):
        BM25IndexManager.load(tmp_path, manager.settings)


def test_unreadable_file_with_a_matching_checksum_is_reported(tmp_path: Path) -> None:
    from hybrid_rag.indices.files import file_sha256

    manager = _manager()
    manager.save(tmp_path)
    folder = tmp_path / SUBDIR
    target = next(folder.glob("seg-*.npz"))
    target.write_bytes(target.read_bytes()[:20])
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    manifest["files"][target.name] = file_sha256(target)
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match="unreadable"):
        BM25IndexManager.load(tmp_path, manager.settings)
