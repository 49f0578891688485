"""Query expansion: the PRF maths as pure functions, then the stage on a real LiveIndex."""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from hybrid_rag.errors import ConfigError, RemoteServiceError
from hybrid_rag.indices.bm25 import BM25IndexManager
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.live import LiveIndex
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.generation import OpenAICompatibleGenerator
from hybrid_rag.retrieval.expansion import (
    Expansion,
    ExpansionMethod,
    QueryExpander,
    expansion_query,
    feedback_hits,
    parse_variants,
    pool_idf,
    rocchio,
    select_expansion_terms,
    term_repetitions,
    truncate_tokens,
)
from hybrid_rag.retrieval.fusion import run_weights
from hybrid_rag.settings import GeneratorSettings, Settings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import Hit

# Ids start at 100 so that a position mistaken for an id shows.
CORPUS = {
    100: "Faiss builds an exact index for inner product search over dense vectors.",
    101: "The Faiss index stores dense vectors and answers inner product search quickly.",
    102: "An index of dense vectors in Faiss supports inner product and L2 search.",
    103: "Inner product search over dense vectors runs well on a GPU.",
    104: "BM25 ranks documents by term frequency and inverse document frequency.",
    105: "Term frequency saturates in BM25: the tenth occurrence adds little.",
    106: "The SQLite store keeps documents, chunks and their hashes.",
    107: "Reciprocal rank fusion combines the dense ranking with the BM25 ranking.",
    108: "The tokenizer splits identifiers such as getFileName into parts.",
    109: "A cross encoder reranks the top candidates for the query.",
}


class RecordingEmbedder(FakeEmbedder):
    """FakeEmbedder that counts its calls."""

    def __init__(self) -> None:
        super().__init__(dimension=32)
        self.query_calls = 0
        self.passage_calls = 0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.query_calls += 1
        return super().embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passage_calls += 1
        return super().embed_passages(texts)


class CannedGenerator:
    """A Generator that answers with fixed text (or raises) and records its prompts."""

    def __init__(self, answer: str = "", error: Exception | None = None) -> None:
        self.answer = answer
        self.error = error
        self.prompts: list[tuple[str, int]] = []

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        self.prompts.append((prompt, max_tokens))
        if self.error is not None:
            raise self.error
        return self.answer


def make_expander(settings: Settings, embedder, generator=None) -> QueryExpander:
    """The expander as the Engine builds it from its settings sections."""
    return QueryExpander(
        settings.expansion, embedder, generator, retrieval=settings.retrieval, bm25=settings.bm25
    )


@pytest.fixture(scope="module")
def embedder() -> RecordingEmbedder:
    return RecordingEmbedder()


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings().with_overrides(
        {"bm25.tokenizer": "regex", "retrieval.dense_top_k": 10, "retrieval.bm25_top_k": 10}
    )


@pytest.fixture(scope="module")
def live(settings: Settings, embedder: RecordingEmbedder) -> LiveIndex:
    ids = np.array(sorted(CORPUS), dtype=np.int64)
    texts = [CORPUS[i] for i in sorted(CORPUS)]
    dense = FaissVectorIndex(embedder.dimension, embedder.model_name)
    dense.add(ids, embedder.embed_passages(texts))
    bm25 = BM25IndexManager(settings.bm25)
    bm25.build(ids, texts)
    return LiveIndex(1, dense, bm25)


def chunk_terms(ids: Sequence[int], tokenizer: Tokenizer) -> Mapping[int, list[str]]:
    return {i: tokenizer.tokenize(CORPUS[i]) for i in ids if i in CORPUS}


def first_pass(query: str, live: LiveIndex, embedder: FakeEmbedder, k: int = 10) -> dict[str, list[Hit]]:
    return {
        "dense": live.dense.search(embedder.embed_queries([query])[0], k),
        "bm25": live.bm25.search(query, k),
    }


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- pure functions: term selection ----------------------------------------------------------


def test_pool_idf_is_higher_for_rarer_terms_and_always_positive() -> None:
    idf = pool_idf([["a", "b"], ["a", "c"], ["a"]])
    assert idf["b"] == idf["c"] > idf["a"] > 0
    assert pool_idf([["a", "b"], ["a", "c"], ["a"]], {"a", "c", "z"}) == {"a": idf["a"], "c": idf["c"]}


def test_select_terms_excludes_query_terms_numbers_and_single_characters() -> None:
    feedback = [["faiss", "gpu", "42", "x", "vectors"], ["faiss", "gpu", "42", "x", "vectors"]]
    terms = select_expansion_terms(feedback, feedback, 10, exclude={"faiss"})
    assert [t for t, _ in terms] == ["gpu", "vectors"]
    assert sum(w for _, w in terms) == pytest.approx(1.0)


def test_select_terms_needs_two_feedback_documents_when_there_are_two() -> None:
    feedback = [["shared", "only_first"], ["shared", "only_second"]]
    assert [t for t, _ in select_expansion_terms(feedback, feedback, 5)] == ["shared"]
    assert [t for t, _ in select_expansion_terms(feedback, feedback, 5, min_feedback_df=1)] == [
        "only_first",
        "only_second",
        "shared",
    ]
    single = select_expansion_terms([["alone", "word"]], [], 5)
    assert [t for t, _ in single] == ["alone", "word"]  # one feedback doc: no df requirement


def test_select_terms_prefers_words_rare_in_the_pool() -> None:
    feedback = [["common", "rare"], ["common", "rare"]]
    pool = [*feedback, ["common"], ["common"], ["common", "other"]]
    terms = select_expansion_terms(feedback, pool, 2)
    assert [t for t, _ in terms] == ["rare", "common"]
    assert terms[0][1] > terms[1][1]


def test_select_terms_follows_document_weights() -> None:
    feedback = [["alpha", "alpha", "beta"], ["beta", "beta", "alpha"]]
    favour_first = select_expansion_terms(feedback, feedback, 1, doc_weights=[0.9, 0.1])
    favour_second = select_expansion_terms(feedback, feedback, 1, doc_weights=[0.1, 0.9])
    assert favour_first[0][0] == "alpha" and favour_second[0][0] == "beta"
    bad = select_expansion_terms(feedback, feedback, 2, doc_weights=[-1.0, float("nan")])
    assert [t for t, _ in bad] == ["alpha", "beta"]  # unusable weights: uniform, ties alphabetical


@pytest.mark.parametrize(("feedback", "n"), [([], 5), ([[], []], 5), ([["word", "term"]], 0)])
def test_select_terms_degenerate_cases_give_nothing(feedback: list[list[str]], n: int) -> None:
    assert select_expansion_terms(feedback, [], n) == []


def test_select_terms_does_not_depend_on_pool_order() -> None:
    feedback = [["a1", "b2", "c3", "b2"], ["b2", "c3", "d4"]]
    pool = [*feedback, ["c3"], ["d4", "e5"], ["a1"]]
    assert select_expansion_terms(feedback, pool, 3) == select_expansion_terms(feedback, pool[::-1], 3)


# -- pure functions: feedback documents -----------------------------------------------------


def test_feedback_hits_are_the_top_of_the_fused_first_pass() -> None:
    first = {"bm25": [Hit(1, 9.0), Hit(2, 8.0), Hit(4, 1.0)], "dense": [Hit(2, 0.9), Hit(3, 0.8)]}
    assert [h.id for h in feedback_hits(first, 3)] == [2, 1, 3]
    assert feedback_hits(first, 2) == feedback_hits(dict(reversed(first.items())), 2)
    assert [h.id for h in feedback_hits({"dense": first["dense"]}, 5)] == [2, 3]


def test_feedback_hits_skip_lists_of_zero_weight() -> None:
    first = {"bm25": [Hit(1, 9.0)], "dense": [Hit(3, 0.8), Hit(2, 0.7)]}
    assert [h.id for h in feedback_hits(first, 5, weights={"bm25": 0.0, "dense": 1.0})] == [3, 2]
    all_zero = feedback_hits(first, 5, weights={"bm25": 0.0, "dense": 0.0})
    assert [h.id for h in all_zero] == [1, 3, 2]  # all-zero weights count as equal


@pytest.mark.parametrize("n", [0, -1])
def test_feedback_hits_for_no_documents(n: int) -> None:
    assert feedback_hits({"bm25": [Hit(1, 1.0)]}, n) == []
    assert feedback_hits({}, 5) == []


# -- pure functions: the expanded BM25 query -------------------------------------------------


def test_expansion_query_repeats_terms_by_weight_and_balances_the_query() -> None:
    text = expansion_query("faiss", 1, [("index", 0.5), ("vector", 0.3), ("gpu", 0.2)])
    words = text.split()
    assert words.count("index") == 3 and words.count("vector") == 2 and words.count("gpu") == 1
    assert words.count("faiss") == 6  # λ = 0.5: as many query repetitions as expansion ones


def test_term_repetitions_round_weights_and_drop_the_faint() -> None:
    weighted = [("a", 0.5), ("b", 0.3), ("c", 0.12), ("d", 0.08)]
    assert term_repetitions(weighted, 3) == [("a", 3), ("b", 2), ("c", 1)]  # d: 0.48 rounds to 0
    assert term_repetitions([], 3) == []
    assert term_repetitions([("zero", 0.0)], 3) == [("zero", 1)]


def test_expansion_query_drops_terms_far_below_the_top_one() -> None:
    words = expansion_query("faiss", 1, [("index", 0.9), ("def", 0.1)]).split()
    assert "def" not in words and words.count("index") == 3


def test_expansion_query_degenerate_cases() -> None:
    assert expansion_query("faiss gpu", 2, []) == "faiss gpu"
    assert expansion_query("?!", 0, [("index", 1.0)]) == "index index index"
    with pytest.raises(ValueError, match="original_weight"):
        expansion_query("q", 1, [("t", 1.0)], original_weight=1.0)


# -- pure functions: Rocchio -----------------------------------------------------------------


def test_rocchio_matches_the_formula_and_is_unit_length() -> None:
    rng = np.random.default_rng(0)
    q, feedback = rng.standard_normal(8), rng.standard_normal((3, 8))
    expected = q + 0.5 * feedback.mean(axis=0)
    out = rocchio(q, feedback, beta=0.5)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected / np.linalg.norm(expected), rtol=1e-5)
    assert np.linalg.norm(out) == pytest.approx(1.0, abs=1e-6)


def test_rocchio_moves_the_query_towards_the_feedback() -> None:
    q, centre = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    before = float(q @ centre)
    after = float(rocchio(q, np.array([centre, centre])) @ centre)
    assert after > before


def test_rocchio_degenerate_cases_fall_back_to_the_query() -> None:
    q = np.array([3.0, 4.0])
    np.testing.assert_allclose(rocchio(q, np.empty((0, 2))), [0.6, 0.8])
    np.testing.assert_allclose(rocchio(q, np.array([[-6.0, -8.0]]), beta=0.5), [0.6, 0.8])  # cancels
    np.testing.assert_allclose(rocchio(q, np.array([[1.0, 1.0]]), beta=0.0), [0.6, 0.8])


# -- pure functions: parsing rewrites, capping passages --------------------------------------


def test_parse_variants_strips_markers_and_drops_repeats_and_the_query() -> None:
    answer = (
        "Here are three rewritten queries:\n"
        "1. **faiss gpu search**\n"
        "\n"
        "2) How do I search vectors on a GPU?\n"
        "- Faiss GPU search\n"
        "Query 3: 'Original query'\n"
        "• nearest neighbour search with CUDA\n"
        "4. extra line beyond n\n"
    )
    assert parse_variants(answer, "original QUERY", 3) == [
        "faiss gpu search",
        "How do I search vectors on a GPU?",
        "nearest neighbour search with CUDA",
    ]
    assert parse_variants("", "q", 3) == []
    assert parse_variants("a\nb\nc", "q", 1) == ["a"]


def test_truncate_tokens_caps_long_text_and_keeps_short_text() -> None:
    long = "vector search " * 200
    cut = truncate_tokens(long, 20)
    assert count_tokens(cut) <= 20 and long.startswith(cut)
    assert truncate_tokens("short text", 20) == "short text"


# -- pure functions: fusion weights ---------------------------------------------------------


def test_run_weights_follow_the_index_each_run_searched() -> None:
    names = ["dense", "bm25", "prf_dense", "prf_bm25", "hyde"]
    assert run_weights(names, 0.8, 0.4, expansion_weight=0.5) == {
        "dense": 0.8,
        "bm25": 0.4,
        "prf_dense": 0.4,
        "prf_bm25": 0.2,
        "hyde": 0.4,
    }
    assert run_weights(["bm25", "prf_bm25"], 1.0, 1.0, expansion_weight=1.0) == {"bm25": 1.0, "prf_bm25": 1.0}


def test_run_weights_give_hyde_the_dense_weight_when_it_replaces_the_dense_list() -> None:
    assert run_weights(["bm25", "hyde"], 0.6, 1.0, expansion_weight=0.5, replace_dense=True) == {
        "bm25": 1.0,
        "hyde": 0.6,
    }


def test_run_weights_share_one_list_weight_among_rewrites() -> None:
    names = ["dense", "mq1_dense", "mq2_dense", "mq3_dense", "mq1_bm25"]
    weights = run_weights(names, 0.9, 0.6, expansion_weight=1.0)
    assert weights["mq1_dense"] == weights["mq3_dense"] == pytest.approx(0.3)
    assert weights["mq1_bm25"] == 0.6 and weights["dense"] == 0.9


def test_run_weights_reject_an_unknown_run() -> None:
    with pytest.raises(ValueError, match="'splade'"):
        run_weights(["splade"], 1.0, 1.0)


# -- the stage: PRF --------------------------------------------------------------------------


def test_prf_adds_a_lexical_and_a_dense_run(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    query = "faiss index"
    passes = first_pass(query, live, embedder)
    result = make_expander(settings, embedder, None).expand(query, passes, live, None, chunk_terms)
    assert set(result.runs) == {"prf_bm25", "prf_dense"}
    assert not result.replace_dense and not result.notes
    assert result.queries and not {"faiss", "index"} & set(result.queries)
    assert {"inner", "product", "dense", "vectors"} & set(result.queries)
    # The PRF win: 103 shares no term with the query, but the feedback terms find it.
    assert 103 not in {h.id for h in passes["bm25"]}
    assert 103 in {h.id for h in result.runs["prf_bm25"][:5]}


def test_prf_dense_is_a_search_with_the_rocchio_vector(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    query = "dense vectors"
    passes = first_pass(query, live, embedder)
    result = make_expander(settings, embedder, None).expand(query, passes, live, None, chunk_terms)
    top = np.array([h.id for h in feedback_hits(passes, settings.expansion.prf_docs)])
    assert len(top) == settings.expansion.prf_docs
    vector = rocchio(embedder.embed_queries([query])[0], live.dense.vectors(top))
    assert result.runs["prf_dense"] == live.dense.search(vector, settings.retrieval.dense_top_k)


def test_prf_uses_the_given_query_vector(settings: Settings, live: LiveIndex) -> None:
    counting = RecordingEmbedder()
    passes = first_pass("faiss index", live, counting)
    calls = counting.query_calls
    vector = counting.embed_queries(["faiss index"])[0]
    make_expander(settings, counting, None).expand(
        "faiss index", passes, live, None, chunk_terms, query_vector=vector
    )
    assert counting.query_calls == calls + 1  # only the call above


def test_prf_respects_allowed_ids(settings: Settings, live: LiveIndex, embedder: FakeEmbedder) -> None:
    allowed = np.array([101, 103, 104, 107], dtype=np.int64)
    query = "faiss index"
    passes = {
        "dense": live.dense.search(embedder.embed_queries([query])[0], 10, allowed),
        "bm25": live.bm25.search(query, 10, allowed),
    }
    result = make_expander(settings, embedder, None).expand(query, passes, live, allowed, chunk_terms)
    assert result.runs["prf_dense"]
    for hits in result.runs.values():
        assert {h.id for h in hits} <= set(allowed.tolist())


def test_prf_adds_only_the_kinds_of_list_the_first_pass_used(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    expander = make_expander(settings, embedder, None)
    passes = first_pass("faiss index", live, embedder)
    only_bm25 = expander.expand("faiss index", {"bm25": passes["bm25"]}, live, None, chunk_terms)
    only_dense = expander.expand("faiss index", {"dense": passes["dense"]}, live, None, chunk_terms)
    assert set(only_bm25.runs) == {"prf_bm25"}
    assert set(only_dense.runs) == {"prf_dense"}


def test_prf_with_empty_first_pass_notes_it(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    result = make_expander(settings, embedder, None).expand(
        "zzz", {"dense": [], "bm25": []}, live, None, chunk_terms
    )
    assert result == Expansion(notes=("prf: the first pass found nothing to feed back",))


def test_prf_survives_chunks_deleted_since_indexing(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    passes = first_pass("faiss index", live, embedder)
    expander = make_expander(settings, embedder, None)
    result = expander.expand("faiss index", passes, live, None, lambda ids, tokenizer: {})
    assert "prf_bm25" not in result.runs and "prf_dense" in result.runs
    assert result.notes == ("prf: no expansion terms in the feedback documents",)


def test_an_empty_query_is_skipped(settings: Settings, live: LiveIndex, embedder: FakeEmbedder) -> None:
    result = make_expander(settings, embedder, None).expand("  ", {}, live, None, chunk_terms)
    assert result == Expansion(notes=("expansion skipped: empty query",))


# -- the stage: HyDE and multi-query ---------------------------------------------------------


def hyde_settings(settings: Settings, **overrides: object) -> Settings:
    return settings.with_overrides(
        {"expansion.method": "hyde", **{f"expansion.{k}": v for k, v in overrides.items()}}
    )


PRF_INSTEAD = "expansion: offline prf used instead of hyde"


def test_hyde_searches_the_dense_index_with_the_generated_passage(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    passage = "Faiss answers inner product search over dense vectors on a GPU."
    generator = CannedGenerator(passage)
    s = hyde_settings(settings, hyde_max_tokens=100)
    passes = first_pass("how fast is vector search", live, embedder)
    result = make_expander(s, embedder, generator).expand(
        "how fast is vector search", passes, live, None, chunk_terms
    )
    assert generator.prompts == [(s.expansion.hyde_prompt.format(query="how fast is vector search"), 100)]
    assert result.queries == (passage,)
    assert result.runs == {"hyde": live.dense.search(embedder.embed_passages([passage])[0], 10)}
    assert result.replace_dense is False and result.notes == ()


def test_hyde_caps_the_passage_and_can_replace_the_dense_list(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    generator = CannedGenerator("dense vectors and inner product search " * 50)
    s = hyde_settings(settings, hyde_max_tokens=12, hyde_replace_query=True)
    passes = first_pass("vector search", live, embedder)
    result = make_expander(s, embedder, generator).expand("vector search", passes, live, None, chunk_terms)
    assert count_tokens(result.queries[0]) <= 12
    assert result.replace_dense is True and result.runs["hyde"]


def test_hyde_needs_the_dense_list_and_prf_takes_its_place(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    generator = CannedGenerator("anything")
    passes = {"bm25": live.bm25.search("faiss index", 10)}
    result = make_expander(hyde_settings(settings), embedder, generator).expand(
        "faiss index", passes, live, None, chunk_terms
    )
    assert generator.prompts == [] and set(result.runs) == {"prf_bm25"}
    assert "dense index" in result.notes[0] and result.notes[1] == PRF_INSTEAD


def test_multi_query_searches_each_rewrite_both_ways_beside_the_method(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    generator = CannedGenerator("1. inner product search\n2. BM25 term frequency\n3. fusion of rankings\n")
    s = settings.with_overrides({"expansion.multi_query_n": 2})
    passes = first_pass("faiss index", live, embedder)
    expander = make_expander(s, embedder, generator)
    result = expander.expand("faiss index", passes, live, None, chunk_terms, method=False, multi_query=True)
    assert result.queries == ("inner product search", "BM25 term frequency")
    assert set(result.runs) == {"mq1_dense", "mq1_bm25", "mq2_dense", "mq2_bm25"}
    assert result.runs["mq2_bm25"] == live.bm25.search("BM25 term frequency", 10)
    assert "2 different ways" in generator.prompts[0][0]
    both = expander.expand("faiss index", passes, live, None, chunk_terms, multi_query=True)
    assert set(both.runs) == {"prf_bm25", "prf_dense", *result.runs}  # its own flag: PRF stays on
    assert set(both.probes) == set(both.runs)
    off = expander.expand("faiss index", passes, live, None, chunk_terms, method=False)
    assert off == Expansion()


def test_multi_query_with_no_usable_rewrite_is_skipped(
    settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    passes = first_pass("faiss", live, embedder)
    result = make_expander(settings, embedder, CannedGenerator("Here you go:\n1. Faiss\n")).expand(
        "faiss", passes, live, None, chunk_terms, method=False, multi_query=True
    )
    assert result.runs == {}
    assert result.notes == ("expansion skipped (multi_query): the generator returned no usable rewrites",)


# -- the stage: failures never raise ---------------------------------------------------------


def _expand_with(
    name: str, generator: object, settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> Expansion:
    """HyDE as the method, or multi-query alone, through ``generator`` (None: not configured)."""
    s = hyde_settings(settings) if name == "hyde" else settings
    passes = first_pass("faiss index", live, embedder)
    return make_expander(s, embedder, generator).expand(  # type: ignore[arg-type]
        "faiss index", passes, live, None, chunk_terms, method=name == "hyde", multi_query=name != "hyde"
    )


def _assert_skipped(result: Expansion, name: str, reason: str) -> None:
    """Skipped with ``reason``; HyDE with PRF in its place, multi-query with nothing."""
    assert result.notes[0] == f"expansion skipped ({name}): {reason}"
    if name == "hyde":
        assert result.notes[1] == PRF_INSTEAD and set(result.runs) == {"prf_bm25", "prf_dense"}
    else:
        assert result.runs == {} and len(result.notes) == 1
    assert not result.replace_dense


@pytest.mark.parametrize("name", ["hyde", "multi_query"])
def test_without_a_generator_llm_stages_are_skipped(
    name: str, settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    result = _expand_with(name, None, settings, live, embedder)
    _assert_skipped(result, name, "no generator configured (set generator.base_url)")


@pytest.mark.parametrize("name", ["hyde", "multi_query"])
def test_an_unreachable_generator_is_a_note_not_an_error(
    name: str, settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    generator = OpenAICompatibleGenerator(GeneratorSettings(base_url=url, retries=0, timeout_seconds=1))
    result = _expand_with(name, generator, settings, live, embedder)
    _assert_skipped(result, name, f"generator at {url}/chat/completions unreachable: connection refused")


@pytest.mark.parametrize("name", ["hyde", "multi_query"])
@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (RemoteServiceError("generator at http://x said HTTP 500"), "generator at http://x said HTTP 500"),
        (RuntimeError("model crashed"), "the generator failed: RuntimeError: model crashed"),
        (TimeoutError("slow"), "the generator failed: TimeoutError: slow"),
    ],
)
def test_whatever_a_generator_raises_is_a_note(
    name: str, error: Exception, reason: str, settings: Settings, live: LiveIndex, embedder: FakeEmbedder
) -> None:
    """A Generator is pluggable: any exception it raises skips its stage, never the query."""
    result = _expand_with(name, CannedGenerator(error=error), settings, live, embedder)
    _assert_skipped(result, name, reason)


def test_an_empty_passage_is_skipped(settings: Settings, live: LiveIndex, embedder: FakeEmbedder) -> None:
    result = _expand_with("hyde", CannedGenerator("   \n"), settings, live, embedder)
    _assert_skipped(result, "hyde", "the generator returned an empty passage")


def test_a_hyde_prompt_with_unknown_fields_is_a_config_error(
    settings: Settings, embedder: FakeEmbedder
) -> None:
    bad = settings.with_overrides({"expansion.hyde_prompt": "Answer {question}"})
    with pytest.raises(ConfigError, match="expansion.hyde_prompt"):
        make_expander(bad, embedder, None)


def test_method_enum_lists_valid_values() -> None:
    assert ExpansionMethod.from_str("HyDE") is ExpansionMethod.HYDE
    with pytest.raises(ConfigError, match="prf, hyde"):
        ExpansionMethod.from_str("rm3")
