"""The ``KeywordIndex`` contract: one suite that every BM25 index passes.

Each entry of ``FACTORIES`` makes an empty index for some ``BM25Settings`` and reopens a saved one;
every test runs once per entry. The contract (``protocols.KeywordIndex``, ``indices/bm25.py``):

* it ranks as the reference over the same terms: rank-bm25 for the variants it implements
  (``robertson``, ``bm25+``, ``bm25l``) and, for ``lucene`` (which rank-bm25 lacks), the formula
  written out in numpy below; scores are proportional to the reference's (bm25s leaves out the
  constant k1 + 1), and only documents holding a query term are hits;
* ties break by ascending id; ``allowed_ids`` is applied before top-k, unknown ids ignored;
* ``score`` equals the search scores, 0 for a held id without a query term, NaN for an absent id;
* degenerate cases give ``[]``: ``k <= 0``, an empty or blank query, an unknown term, an empty
  allowed set, an empty index, documents without a single term;
* ``build`` replaces the corpus and refuses duplicate ids; save / load round-trips.

To add a backend, append a ``KeywordFactory``; backend-specific behaviour (file formats, checksums,
min_df, stop words, the spaCy tokenizer) stays in ``tests/unit/test_bm25_index.py`` and beside the
backend's own tests.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.protocols import KeywordIndex
from hybrid_rag.settings import BM25Settings

NO_MILVUS = pytest.mark.skipif(
    find_spec("pymilvus") is None, reason="the [milvus] extra (pymilvus, milvus-lite) is not installed"
)
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
    "Sparse retrieval with BM25 finds exact identifiers and rare terms: e.g. c++ templates.",
    "The context builder cites each chunk by path and line range. Café crème.",
    "Hybrid retrieval runs the dense and the sparse retriever and fuses their rankings.",
    "The file loader skips binary files and files ignored by gitignore.",
    "Each index version is written to a new folder and the pointer is switched atomically.",
    "The SQLite store keeps documents, chunks and their hashes.",
    "A query about file names should find getFileName and get_file_name.",
]
IDS = np.arange(len(CORPUS), dtype=np.int64) * 10 + 3  # sparse, like SQLite row ids after deletions
QUERIES = [
    "dense vectors",
    "inverse document frequency",
    "get file name",
    "BM25 ranking fusion",
    "chunks path line",
    "sqlite documents",
    "term frequency document length",
    "index rebuilt corpus changes",
    "c++ e.g.",
    "café",
    "retrieval",
]


@dataclass(frozen=True)
class KeywordFactory:
    """How the contract makes and reopens one kind of keyword index.

    ``make(settings, workdir)`` returns an empty index for ``settings`` (the contract passes the
    tokenizer, stop words and variant it needs); ``load(directory, settings, workdir)`` reopens what
    ``index.save(directory)`` wrote. ``variant`` is the BM25 formula it implements.
    """

    name: str
    backend: str
    variant: str
    make: Callable[[BM25Settings, Path], Any]
    load: Callable[[Path, BM25Settings, Path], Any]
    marks: tuple[pytest.MarkDecorator, ...] = ()

    def settings(self, **overrides: Any) -> BM25Settings:
        fixed = {"backend": self.backend, "variant": self.variant, "tokenizer": "regex", "stopwords": "none"}
        return BM25Settings(**{**fixed, **overrides})


def _local(settings: BM25Settings, _: Path) -> Any:
    from hybrid_rag.indices.bm25 import BM25IndexManager

    return BM25IndexManager(settings)


def _local_load(directory: Path, settings: BM25Settings, _: Path) -> Any:
    from hybrid_rag.indices.bm25 import BM25IndexManager

    return BM25IndexManager.load(directory, settings)


class _Deltas:
    """A segmented BM25 whose ``build`` lands as a base, two delta segments and tombstones (a
    decoy added then deleted), as successive ingests leave it (``indices/segmented.py``)."""

    def __init__(self, settings: BM25Settings) -> None:
        from hybrid_rag.indices.bm25 import BM25IndexManager

        self.manager = BM25IndexManager(settings.model_copy(update={"max_deltas": 8, "merge_fraction": 1.0}))

    def build(self, ids: Any, texts: Any) -> None:
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        half, three = len(ids) // 2, (3 * len(ids)) // 4
        decoy = np.array([-(2**62)], dtype=np.int64)
        self.manager.build(np.concatenate([ids[:half], decoy]), [*texts[:half], "decoy " * 3])
        none = np.array([], dtype=np.int64)
        self.manager.update(none, ids[half:three], list(texts[half:three]))
        self.manager.update(decoy, ids[three:], list(texts[three:]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.manager, name)

    def __len__(self) -> int:
        return len(self.manager)


def _deltas(settings: BM25Settings, _: Path) -> Any:
    return _Deltas(settings)


def _milvus_client(workdir: Path) -> Any:
    from hybrid_rag.indices.milvus.client import connect
    from hybrid_rag.settings import MilvusSettings

    return connect(MilvusSettings(uri="conformance.db"), workdir)


def _milvus(settings: BM25Settings, workdir: Path) -> Any:
    from hybrid_rag.indices.milvus.bm25 import MilvusKeywordIndex
    from hybrid_rag.settings import MilvusSettings

    name = "k_" + uuid.uuid4().hex[:12]
    return MilvusKeywordIndex.create(_milvus_client(workdir), name, MilvusSettings(), settings)


def _milvus_load(directory: Path, settings: BM25Settings, workdir: Path) -> Any:
    from hybrid_rag.indices.milvus.bm25 import MilvusKeywordIndex
    from hybrid_rag.settings import MilvusSettings

    return MilvusKeywordIndex.load(directory, _milvus_client(workdir), MilvusSettings(), settings)


FACTORIES: list[KeywordFactory] = [
    KeywordFactory("bm25s-lucene", "bm25s", "lucene", _local, _local_load),
    KeywordFactory("bm25s-robertson", "bm25s", "robertson", _local, _local_load),
    KeywordFactory("bm25s-bm25+", "bm25s", "bm25+", _local, _local_load),
    KeywordFactory("bm25s-segments-lucene", "bm25s", "lucene", _deltas, _local_load),
    KeywordFactory("bm25s-segments-bm25+", "bm25s", "bm25+", _deltas, _local_load),
    KeywordFactory("rank_bm25-robertson", "rank_bm25", "robertson", _local, _local_load),
    KeywordFactory("rank_bm25-bm25+", "rank_bm25", "bm25+", _local, _local_load),
    # Milvus's BM25 function is Lucene's formula; bm25.backend milvus keeps variant lucene
    KeywordFactory("milvus", "milvus", "lucene", _milvus, _milvus_load, marks=(NO_MILVUS,)),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("keyword-contract")
    if find_spec("pymilvus") is not None:
        from hybrid_rag.indices.milvus.client import forget_clients

        forget_clients()  # release the milvus-lite file


@pytest.fixture(params=[pytest.param(f, id=f.name, marks=f.marks) for f in FACTORIES])
def factory(request: pytest.FixtureRequest) -> KeywordFactory:
    return request.param


def make(factory: KeywordFactory, workdir: Path, ids: np.ndarray = IDS, texts: list[str] = CORPUS) -> Any:
    index = factory.make(factory.settings(), workdir)
    index.build(np.asarray(ids, dtype=np.int64), texts)
    return index


@pytest.fixture
def built(factory: KeywordFactory, workdir: Path) -> Any:
    return make(factory, workdir)


# ------------------------------------------------------------------------------------ the reference


def lucene_scores(docs: list[list[str]], query: list[str], k1: float, b: float) -> np.ndarray:
    """Lucene's BM25 (rank-bm25 has no such class): idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
    tf part tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl)), summed over the query's terms."""
    n = len(docs)
    avgdl = sum(map(len, docs)) / n if n else 0.0
    out = np.zeros(n)
    for term in query:
        df = sum(term in d for d in docs)
        if not df:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = d.count(term)
            if tf:
                out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
    return out


def reference_scores(settings: BM25Settings, texts: list[str], query: str) -> np.ndarray:
    """The reference score of every document: rank-bm25 where it has the variant, else numpy."""
    tokenizer = Tokenizer.for_settings(settings)
    docs, terms = tokenizer.tokenize_many(texts), tokenizer.tokenize(query)
    if settings.variant == "lucene":
        return lucene_scores(docs, terms, settings.k1, settings.b)
    import rank_bm25

    from hybrid_rag.indices.bm25 import DELTA

    common = {"k1": settings.k1, "b": settings.b}
    if settings.variant == "robertson":
        model = rank_bm25.BM25Okapi(docs, epsilon=0.0, **common)
    elif settings.variant == "bm25l":
        model = rank_bm25.BM25L(docs, delta=DELTA["bm25l"], **common)
    else:
        model = rank_bm25.BM25Plus(docs, delta=DELTA["bm25+"], **common)
    scores = np.asarray(model.get_scores(terms), dtype=np.float64)
    matched = np.array([not set(terms).isdisjoint(d) for d in docs])
    return np.where(matched, scores, 0.0)  # bm25+ / bm25l floors alone are no match


# ------------------------------------------------------------------------------------ the contract


def test_implements_the_protocol(built: Any) -> None:
    assert isinstance(built, KeywordIndex)
    assert len(built) == len(CORPUS)
    assert np.array_equal(built.ids(), IDS) and built.ids().dtype == np.int64


def test_ranks_as_the_reference_over_the_same_terms(factory: KeywordFactory, built: Any) -> None:
    compared = 0
    for query in QUERIES:
        want = reference_scores(factory.settings(), CORPUS, query)
        keep = want > 0
        order = np.lexsort((IDS[keep], -want[keep]))
        hits = built.search(query, len(CORPUS))
        assert [h.id for h in hits] == IDS[keep][order].tolist(), query
        if hits:
            got = np.array([h.score for h in hits])
            ratio = want[keep][order][0] / got[0]  # bm25s leaves out k1 + 1; Milvus keeps it
            np.testing.assert_allclose(got * ratio, want[keep][order], rtol=1e-5)
        compared += len(hits)
    assert compared > 40  # the queries match a fair part of the corpus, not one document each


def test_ties_break_by_ascending_id(factory: KeywordFactory, workdir: Path) -> None:
    texts = ["alpha beta", "alpha beta", "gamma", "alpha beta", "delta", "", "epsilon", "zeta", "eta"]
    index = make(factory, workdir, np.array([90, 20, 50, 70, 10, 30, 40, 60, 80]), texts)
    hits = index.search("alpha", 10)
    assert [h.id for h in hits] == [20, 70, 90]
    assert hits[0].score == pytest.approx(hits[1].score) == pytest.approx(hits[2].score) and hits[0].score > 0
    assert [h.id for h in index.search("alpha", 2)] == [20, 70]
    assert [h.id for h in index.search("alpha", 1, allowed_ids=np.array([90, 70]))] == [70]


def test_allowed_ids_are_applied_before_top_k(built: Any) -> None:
    query = "document path index"
    everything = built.search(query, len(CORPUS))
    assert len(everything) >= 8
    allowed = np.array([h.id for h in everything[-4:]] + [999_999])  # the weakest matches, an unknown id
    assert [h.id for h in built.search(query, 3, allowed_ids=allowed)] == [h.id for h in everything[-4:-1]]
    assert built.search(query, 10, allowed_ids=allowed) == everything[-4:]
    assert built.search(query, 10, allowed_ids=np.array([IDS[4]])) == []  # allowed, but no match


def test_score_equals_the_search_scores(built: Any) -> None:
    for query in ("document frequency", "get file name", "c++ e.g."):
        hits = built.search(query, len(CORPUS))
        unmatched = next(i for i in IDS.tolist() if i not in {h.id for h in hits})
        asked = np.array([*[h.id for h in hits][::-1], unmatched, 999], dtype=np.int64)
        scores = built.score(query, asked)
        np.testing.assert_allclose(scores[:-2], [h.score for h in hits][::-1], rtol=1e-6)
        assert scores[-2] == 0.0 and np.isnan(scores[-1])  # held without a query term; not held
    assert built.score("", IDS[:2]).tolist() == [0.0, 0.0]


def test_degenerate_cases_give_empty_results(factory: KeywordFactory, built: Any, workdir: Path) -> None:
    assert built.search("dense", 0) == [] and built.search("dense", -1) == []
    assert built.search("", 5) == [] and built.search("   ", 5) == [] and built.search("!! ?", 5) == []
    assert built.search("xylophone", 5) == []  # an unknown term
    assert built.search("dense", 5, allowed_ids=np.empty(0, dtype=np.int64)) == []
    empty = factory.make(factory.settings(), workdir)
    assert len(empty) == 0 and empty.search("dense", 5) == [] and np.isnan(empty.score("x", IDS[:1])).all()
    empty.build(np.empty(0, dtype=np.int64), [])
    assert len(empty) == 0 and empty.search("dense", 5) == []
    blank = make(factory, workdir, np.array([4, 8]), ["", "!! ??"])  # documents without a single term
    assert len(blank) == 2 and np.array_equal(blank.ids(), [4, 8]) and blank.search("dense", 5) == []


def test_build_replaces_the_corpus_and_refuses_duplicates(factory: KeywordFactory, built: Any) -> None:
    built.build(np.array([1, 2, 3]), ["alpha", "beta", "gamma"])
    assert len(built) == 3 and np.array_equal(built.ids(), [1, 2, 3]) and built.search("dense", 5) == []
    assert [h.id for h in built.search("beta", 5)] == [2]
    with pytest.raises(ValueError, match="duplicate"):
        built.build(np.array([1, 1]), ["a", "b"])


def test_save_and_load_round_trip(factory: KeywordFactory, built: Any, tmp_path: Path, workdir: Path) -> None:
    built.save(tmp_path)
    loaded = factory.load(tmp_path, factory.settings(), workdir)
    assert np.array_equal(loaded.ids(), built.ids())
    for query in QUERIES:
        assert loaded.search(query, 10) == built.search(query, 10)
        assert loaded.search(query, 10, IDS[::3]) == built.search(query, 10, IDS[::3])
