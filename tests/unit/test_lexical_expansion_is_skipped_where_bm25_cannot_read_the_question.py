"""PRF's lexical half (RM3) searches BM25 with the feedback documents' words beside the
question's: it is skipped, and the trace says why, where BM25 cannot read the question (its own
list is empty, or it is in a language the index does not hold and most of its terms are unknown
to the index). The dense half (Rocchio) still runs; a misdetected short question whose words
the index holds is still expanded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.indices.bm25 import BM25IndexManager
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.live import LiveIndex
from hybrid_rag.lang.query import Asked
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.retrieval.expansion import QueryExpander, lexical_skip_reason
from hybrid_rag.settings import Settings
from hybrid_rag.types import Hit

CORPUS = {
    100: "Faiss builds an exact index for inner product search over dense vectors.",
    101: "The Faiss index stores dense vectors and answers inner product search quickly.",
    102: "An index of dense vectors in Faiss supports inner product and L2 search.",
    103: "Inner product search over dense vectors runs well on a GPU.",
    104: "BM25 ranks documents by term frequency and inverse document frequency.",
    105: "Term frequency saturates in BM25: the tenth occurrence adds little.",
    106: "The SQLite store keeps documents, chunks and their hashes.",
    107: "Reciprocal rank fusion combines the dense ranking with the BM25 ranking.",
}
RUSSIAN = "Какой индекс строит Faiss для поиска по плотным векторам?"  # "faiss" is the one known term


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings().with_overrides({"bm25.tokenizer": "regex"})


@pytest.fixture(scope="module")
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dimension=32)


@pytest.fixture(scope="module")
def live(settings: Settings, embedder: FakeEmbedder) -> LiveIndex:
    ids = np.array(sorted(CORPUS), dtype=np.int64)
    texts = [CORPUS[i] for i in sorted(CORPUS)]
    dense = FaissVectorIndex(embedder.dimension, embedder.model_name)
    dense.add(ids, embedder.embed_passages(texts))
    bm25 = BM25IndexManager(settings.bm25)
    bm25.build(ids, texts, langs=["en"] * len(texts))
    return LiveIndex(1, dense, bm25)


def chunk_terms(ids: Sequence[int], tokenizer: Tokenizer) -> Mapping[int, list[str]]:
    return {i: tokenizer.tokenize(CORPUS[i]) for i in ids if i in CORPUS}


def expand(
    settings: Settings,
    embedder: FakeEmbedder,
    live: LiveIndex,
    query: str,
    runs: dict[str, list[Hit]],
    asked: Asked | None = None,
):
    expander = QueryExpander(
        settings.expansion, embedder, None, retrieval=settings.retrieval, bm25=settings.bm25
    )
    return expander.expand(query, runs, live, None, chunk_terms, asked=asked)


def first_pass(query: str, live: LiveIndex, embedder: FakeEmbedder) -> dict[str, list[Hit]]:
    return {
        "dense": live.dense.search(embedder.embed_queries([query])[0], 10),
        "bm25": live.bm25.search(query, 10),
    }


def test_an_empty_bm25_list_gets_no_lexical_expansion(
    settings: Settings, embedder: FakeEmbedder, live: LiveIndex
) -> None:
    runs = first_pass("faiss index", live, embedder)
    result = expand(settings, embedder, live, "faiss index", {"dense": runs["dense"], "bm25": []})
    assert set(result.runs) == {"prf_dense"}
    assert result.notes == ("prf: lexical expansion skipped: the question's own BM25 list is empty",)


def test_a_question_in_a_language_the_index_lacks_gets_no_lexical_expansion(
    settings: Settings, embedder: FakeEmbedder, live: LiveIndex
) -> None:
    runs = first_pass(RUSSIAN, live, embedder)
    assert runs["bm25"], "the one known term (faiss) finds chunks: the empty-list rule alone would expand"
    result = expand(settings, embedder, live, RUSSIAN, runs)
    assert set(result.runs) == {"prf_dense"}
    (note,) = result.notes
    assert note.startswith(
        "prf: lexical expansion skipped: the question's language (ru) is not among the index's (en)"
    )


def test_a_short_question_detected_in_another_language_whose_words_the_index_holds_is_expanded(
    settings: Settings, embedder: FakeEmbedder, live: LiveIndex
) -> None:
    asked = Asked.of("faiss index", "fr")  # as the detector reads "faiss index" (fr, .99)
    result = expand(settings, embedder, live, "faiss index", first_pass("faiss index", live, embedder), asked)
    assert set(result.runs) == {"prf_bm25", "prf_dense"} and not result.notes


def test_the_query_trace_says_why_the_lexical_expansion_was_skipped(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in CORPUS.items():
        (docs / f"d{i}.md").write_text(f"# Note {i}\n\n{text} " * 3)
    settings = fake_settings(tmp_path / "data")
    engine = Engine(settings)
    try:
        engine.ingest([docs])
        russian = engine.query(RUSSIAN)
        english = engine.query("which index does faiss build for dense vectors")
    finally:
        engine.close()

    def lists(result) -> set[str]:
        return {name for c in result.chunks for name in c.breakdown}

    # where the question's reading (retrieval/reading.py) leaves BM25 out of a cross-lingual hybrid
    # query, its note says why, and no lexical expansion runs either
    assert any(
        "lexical expansion skipped: the question's language (ru)" in n or n.startswith("BM25 skipped")
        for n in russian.trace.notes
    )
    assert "prf_dense" in lists(russian) and "prf_bm25" not in lists(russian)
    assert not any("lexical expansion skipped" in n for n in english.trace.notes)
    assert "prf_bm25" in lists(english)


def test_without_the_index_languages_only_an_empty_list_skips() -> None:
    english_only = Tokenizer(kind="regex", languages=False)
    hits = {"bm25": [Hit(1, 1.0)], "dense": [Hit(1, 0.9)]}
    assert lexical_skip_reason(RUSSIAN, hits, english_only, lambda terms: []) is None
    assert (
        lexical_skip_reason(RUSSIAN, {**hits, "bm25": []}, english_only)
        == "the question's own BM25 list is empty"
    )
    assert lexical_skip_reason(RUSSIAN, {"dense": [Hit(1, 0.9)]}, english_only) is None  # no BM25 list at all
