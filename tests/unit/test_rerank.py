"""Rerankers and the merge: apply_rerank, lexical BM25, embedding windows, a tiny real cross-encoder,
and the HTTP reranker against a local server."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_http import FakeServer, closed_port, serve

from hybrid_rag.errors import ConfigError, ModelError, RemoteServiceError
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.rerankers import (
    ApiReranker,
    CrossEncoderReranker,
    parse_rerank_response,
    rerank_payload,
    resolve_cross_encoder,
)
from hybrid_rag.protocols import Reranker
from hybrid_rag.retrieval.rerank import (
    EmbeddingWindowReranker,
    LexicalReranker,
    apply_rerank,
    blend_scores,
    bm25_over_candidates,
    competition_ranks,
    make_reranker,
    max_window_similarity,
    rerank_candidates,
    text_windows,
)
from hybrid_rag.settings import RerankSettings, Settings
from hybrid_rag.types import Chunk, ScoredChunk, SourceType


def sc(chunk_id: int, text: str = "", score: float = 0.0) -> ScoredChunk:
    text = text or f"chunk {chunk_id}"
    chunk = Chunk(
        id=chunk_id,
        document_id=chunk_id,
        path=f"doc{chunk_id}.txt",
        position=0,
        start_line=1,
        end_line=1,
        text=text,
        token_count=len(text.split()),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        source_type=SourceType.TEXT,
        language="text",
        collection="default",
    )
    return ScoredChunk(chunk, score, {"fusion": score})


def fused(n: int) -> list[ScoredChunk]:
    """n candidates in fused order: ids 10, 11, ... with falling scores."""
    return [sc(10 + i, score=1.0 - i / 100) for i in range(n)]


def ids(chunks: Sequence[ScoredChunk]) -> list[int]:
    return [c.id for c in chunks]


# -- apply_rerank ------------------------------------------------------------------------------


def test_apply_rerank_reorders_the_head_and_keeps_the_tail() -> None:
    cands = fused(5)
    out = apply_rerank(cands, [0.1, 0.9, 0.5], "lexical", 3)
    assert ids(out) == [11, 12, 10, 13, 14]
    assert [c.score for c in out[:3]] == [0.9, 0.5, 0.1]
    assert out[0].breakdown == {"fusion": cands[1].score, "lexical": 0.9, "lexical_rank": 1.0}
    assert cands[1].score == pytest.approx(0.99)  # the input is untouched
    # the tail (fused scores .97, .96 > the head's last .1) is shifted under the head, spacing kept
    assert out[3].score < 0.1 and out[3].score - out[4].score == pytest.approx(0.01)
    assert out[3].breakdown == cands[3].breakdown and out[3].chunk is cands[3].chunk


def test_a_tail_already_below_the_head_is_returned_as_is() -> None:
    cands = fused(4)
    out = apply_rerank(cands, [5.0, 7.0], "x", 2)
    assert ids(out) == [11, 10, 12, 13]
    assert out[2] is cands[2] and out[3] is cands[3]


def test_apply_rerank_ties_break_by_chunk_id() -> None:
    cands = [sc(9, score=3.0), sc(3, score=2.0), sc(5, score=1.0)]
    out = apply_rerank(cands, [1.0, 1.0, 1.0], "x", 10)
    assert ids(out) == [3, 5, 9]
    assert [c.breakdown["x_rank"] for c in out] == [1.0, 1.0, 1.0]


def test_apply_rerank_top_n_in_larger_than_the_list_reorders_all() -> None:
    out = apply_rerank(fused(3), [1.0, 3.0, 2.0], "x", 40)
    assert ids(out) == [11, 12, 10]


def test_apply_rerank_degenerate_inputs() -> None:
    assert apply_rerank([], [], "x", 40) == []
    assert apply_rerank([], np.zeros(0), "x", 40, blend="rrf", weight=0.5) == []
    cands = fused(3)
    assert apply_rerank(cands, [], "x", 0) == cands
    with pytest.raises(ValueError, match="2 rerank scores for 3 candidates"):
        apply_rerank(cands, [1.0, 2.0], "x", 3)
    with pytest.raises(ValueError, match="NaN"):
        apply_rerank(cands, [1.0, math.nan, 2.0], "x", 3)


def test_apply_rerank_is_a_permutation_whatever_the_scores() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        n, top = int(rng.integers(0, 12)), int(rng.integers(1, 15))
        cands = fused(n)
        scores = rng.integers(0, 3, size=min(n, top)).astype(float)  # many ties
        for blend in ("none", "rrf", "linear"):
            out = apply_rerank(cands, scores, "x", top, blend=blend, weight=float(rng.random()))
            assert sorted(ids(out)) == ids(cands)
            assert ids(out[top:]) == ids(cands[top:])
            head = out[:top]
            assert all((a.score, -a.id) >= (b.score, -b.id) for a, b in itertools.pairwise(head))
            assert all(a.score > b.score for a, b in itertools.pairwise(out[top - 1 :]))


def test_rrf_blend_with_a_reranker_that_cannot_decide_keeps_the_fused_order() -> None:
    cands = [sc(9, score=3.0), sc(3, score=2.0), sc(5, score=1.0)]
    out = apply_rerank(cands, [0.0, 0.0, 0.0], "x", 3, blend="rrf", weight=0.5)
    assert ids(out) == [9, 3, 5]


def test_blends_at_their_extremes() -> None:
    cands = fused(4)
    scores = [0.2, 0.1, 0.4, 0.3]
    alone = ids(apply_rerank(cands, scores, "x", 4))
    assert alone == [12, 13, 10, 11]
    assert ids(apply_rerank(cands, scores, "x", 4, blend="rrf", weight=1.0)) == alone
    assert ids(apply_rerank(cands, scores, "x", 4, blend="linear", weight=1.0)) == alone
    assert ids(apply_rerank(cands, scores, "x", 4, blend="rrf", weight=0.0)) == ids(cands)
    assert ids(apply_rerank(cands, scores, "x", 4, blend="linear", weight=0.0)) == ids(cands)


def test_rrf_blend_is_the_weighted_sum_of_reciprocal_ranks() -> None:
    out = blend_scores(np.array([0.1, 0.9]), np.array([2.0, 1.0]), "rrf", 0.25)
    assert out.tolist() == pytest.approx([0.25 / 62 + 0.75 / 61, 0.25 / 61 + 0.75 / 62])
    linear = blend_scores(np.array([0.1, 0.9, 0.5]), np.array([3.0, 2.0, 1.0]), "linear", 0.5)
    assert linear.tolist() == pytest.approx([0.5, 0.75, 0.25])


def test_blend_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown blend"):
        blend_scores(np.ones(2), np.ones(2), "max", 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        blend_scores(np.ones(2), np.ones(2), "rrf", 1.5)


def test_competition_ranks_share_the_best_rank() -> None:
    assert competition_ranks(np.array([0.5, 0.9, 0.5, 0.1])).tolist() == [2, 1, 2, 4]
    assert competition_ranks(np.zeros(0)).tolist() == []


def test_rerank_candidates_uses_the_settings_blend() -> None:
    class Constant:
        name = "const"
        calls = 0

        def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
            Constant.calls += 1
            assert len(candidates) == 2
            return np.array([0.0, 1.0])

    cands = fused(3)
    plain = rerank_candidates(Constant(), "q", cands, RerankSettings(top_n_in=2, blend="none"))
    assert ids(plain) == [11, 10, 12]
    # reranker weight 0.4 < 0.5: the fused order wins the head
    mixed = rerank_candidates(Constant(), "q", cands, RerankSettings(top_n_in=2, blend="rrf", weight=0.4))
    assert ids(mixed) == [10, 11, 12]
    assert rerank_candidates(Constant(), "q", [], RerankSettings()) == []
    assert Constant.calls == 2


# -- lexical -----------------------------------------------------------------------------------


def test_bm25_over_candidates_matches_the_formula() -> None:
    docs = [["soil", "clay", "soil"], ["tomato"], ["soil"]]
    got = bm25_over_candidates(["soil", "soil", "rain"], docs, k1=1.2, b=0.75)
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    avg = 5 / 3

    def term(tf: int, length: int) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))

    assert got.tolist() == pytest.approx([term(2, 3), 0.0, term(1, 1)])


def test_bm25_over_candidates_degenerate() -> None:
    assert bm25_over_candidates([], [["a"]]).tolist() == [0.0]
    assert bm25_over_candidates(["a"], []).tolist() == []
    assert bm25_over_candidates(["a"], [[], []]).tolist() == [0.0, 0.0]


def test_lexical_reranker_prefers_the_candidate_with_the_query_terms() -> None:
    reranker = LexicalReranker(Tokenizer(kind="regex"))
    cands = [sc(1, "Compost improves clay soil"), sc(2, "def parse_config_file(path): ..."), sc(3, "x")]
    scores = reranker.score("parse config file", cands)
    assert int(np.argmax(scores)) == 1 and scores[0] == 0.0 == scores[2]
    assert reranker.score("the of and", cands).tolist() == [0.0, 0.0, 0.0]  # stop words only
    assert reranker.score("soil", []).shape == (0,)
    assert isinstance(reranker, Reranker)


# -- embedding windows -------------------------------------------------------------------------


def test_text_windows_cover_every_word_with_overlap() -> None:
    assert text_windows("a b c d e", 3, 1) == ["a b c", "c d e"]
    assert text_windows("short text", 5, 1) == ["short text"]
    assert text_windows("", 5, 1) == [""]
    words = [f"w{i}" for i in range(23)]
    text = "line one\n" + " ".join(words)
    windows = text_windows(text, 6, 2)
    assert all(len(w.split()) == 6 for w in windows)
    assert set(" ".join(windows).split()) == set(text.split())
    assert windows[0].startswith("line one\nw0")  # slices of the original text


def test_max_window_similarity_takes_the_best_window() -> None:
    q = np.array([1.0, 0.0])
    windows = [np.array([[0.0, 1.0], [0.6, 0.8]]), np.array([[1.0, 0.0]])]
    assert max_window_similarity(q, windows).tolist() == pytest.approx([0.6, 1.0])


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.passages: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages.extend(texts)
        return super().embed_passages(texts)


FILLER = " ".join(f"filler{i}" for i in range(200))


def test_windows_find_a_passage_that_the_whole_chunk_dilutes() -> None:
    embedder = FakeEmbedder(dimension=256)
    buried = sc(1, FILLER + " tomato soil compost watering")
    vague = sc(2, "tomato " + " ".join(f"other{i}" for i in range(20)))
    whole = EmbeddingWindowReranker(embedder, window_words=10_000, overlap_words=0)
    windowed = EmbeddingWindowReranker(embedder, window_words=16, overlap_words=4)
    query = "tomato soil compost watering"
    assert whole.score(query, [buried, vague]).tolist()[0] < whole.score(query, [buried, vague])[1]
    assert windowed.score(query, [buried, vague])[0] > windowed.score(query, [buried, vague])[1]


def test_one_window_is_the_plain_cosine() -> None:
    embedder = FakeEmbedder()
    cands = [sc(1, "compost clay soil"), sc(2, "circle area radius")]
    got = EmbeddingWindowReranker(embedder, window_words=50, overlap_words=10).score("soil", cands)
    expected = embedder.embed_passages([c.text for c in cands]) @ embedder.embed_queries(["soil"])[0]
    assert got == pytest.approx(expected.astype(float), abs=1e-6)


def test_window_vectors_are_cached_by_chunk_hash() -> None:
    embedder = CountingEmbedder()
    reranker = EmbeddingWindowReranker(embedder, window_words=8, overlap_words=2, cache_size=2)
    a, b, c = sc(1, FILLER[:300]), sc(2, "b text"), sc(3, "c text")
    first = reranker.score("q", [a, b])
    embedded = len(embedder.passages)
    assert embedded > 2  # a is several windows
    assert reranker.score("q", [a, b]) == pytest.approx(first)
    assert len(embedder.passages) == embedded
    reranker.score("q", [sc(4, "b text")])  # same text, other id: same hash, cached
    assert len(embedder.passages) == embedded
    reranker.score("q", [c])  # evicts a (least recently used)
    reranker.score("q", [a])
    assert len(embedder.passages) > embedded + 1
    assert reranker.score("q", []).shape == (0,)


def test_no_cache_embeds_every_time() -> None:
    embedder = CountingEmbedder()
    reranker = EmbeddingWindowReranker(embedder, cache_size=0)
    reranker.score("q", [sc(1, "x y")])
    reranker.score("q", [sc(1, "x y")])
    assert embedder.passages == ["x y", "x y"]


@pytest.mark.parametrize(("window", "overlap"), [(0, 0), (8, 8), (8, -1)])
def test_bad_window_settings_are_config_errors(window: int, overlap: int) -> None:
    with pytest.raises(ConfigError, match="window"):
        EmbeddingWindowReranker(FakeEmbedder(), window_words=window, overlap_words=overlap)


# -- factory -----------------------------------------------------------------------------------


def test_make_reranker_builds_each_backend_cheaply() -> None:
    embedder = FakeEmbedder()
    s = Settings()
    assert isinstance(make_reranker(s.rerank, embedder, bm25=s.bm25), EmbeddingWindowReranker)
    lexical = make_reranker(
        (s.with_overrides({"rerank.backend": "lexical", "bm25.stemmer": "english"})).rerank,
        embedder,
        bm25=(s.with_overrides({"rerank.backend": "lexical", "bm25.stemmer": "english"})).bm25,
    )
    assert isinstance(lexical, LexicalReranker) and lexical.tokenizer.stemmer == "english"
    missing = s.with_overrides({"rerank.backend": "cross_encoder", "rerank.rerank_model": "/nonexistent/x"})
    assert isinstance(
        make_reranker(missing.rerank, embedder, bm25=missing.bm25), CrossEncoderReranker
    )  # nothing loaded yet
    api = make_reranker(
        (s.with_overrides({"rerank.backend": "api", "rerank.api_url": "http://h/rerank"})).rerank,
        embedder,
        bm25=(s.with_overrides({"rerank.backend": "api", "rerank.api_url": "http://h/rerank"})).bm25,
    )
    assert isinstance(api, ApiReranker)
    with pytest.raises(ConfigError, match=r"rerank\.api_url"):
        make_reranker(
            (s.with_overrides({"rerank.backend": "api"})).rerank,
            embedder,
            bm25=(s.with_overrides({"rerank.backend": "api"})).bm25,
        )
    for r in (lexical, api, make_reranker(s.rerank, embedder, bm25=s.bm25)):
        assert isinstance(r, Reranker)


# -- cross-encoder -----------------------------------------------------------------------------


def test_no_cross_encoder_is_one_clear_model_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hybrid_rag.models.rerankers._in_hf_cache", lambda name: False)  # no hub import
    settings = RerankSettings(
        rerank_model="no-such-org/no-such-reranker", fallback_model=str(tmp_path / "nope")
    )
    reranker = CrossEncoderReranker(settings)  # cheap: nothing is resolved yet
    with pytest.raises(ModelError) as info:
        reranker.score("q", [sc(1)])
    message = str(info.value)
    assert "\n" not in message and "no-such-reranker" in message and "nope" in message
    assert reranker.score("q", []).shape == (0,)  # no candidates: no model needed


def test_resolve_prefers_the_primary_and_falls_back_to_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hybrid_rag.models.rerankers._in_hf_cache", lambda name: name == "org/cached")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert resolve_cross_encoder(str(tmp_path / "a"), str(tmp_path / "b")) == str(tmp_path / "a")
    assert resolve_cross_encoder("no-such-org/x", str(tmp_path / "b")) == str(tmp_path / "b")
    assert resolve_cross_encoder("org/cached", str(tmp_path / "b")) == "org/cached"
    assert resolve_cross_encoder(str(tmp_path / "gone"), "org/cached") == "org/cached"


def test_the_model_loads_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []

    def slow_load(self: CrossEncoderReranker) -> object:
        loads.append(1)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(CrossEncoderReranker, "_load", slow_load)
    reranker = CrossEncoderReranker(RerankSettings())
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(reranker.model)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1 and len({id(m) for m in seen}) == 1


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "circle", "area", "radius", "soil", "compost", "clay"]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised one-layer BERT cross-encoder saved like a downloaded one."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-ce")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=1,
    )
    model_dir = root / "model"
    BertForSequenceClassification(config).save_pretrained(model_dir)
    BertTokenizerFast(vocab_file=str(root / "vocab.txt"), do_lower_case=True).save_pretrained(model_dir)
    return model_dir


@pytest.mark.slow
def test_tiny_cross_encoder_end_to_end(tiny_cross_encoder: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    # the primary is a hub name that is not cached (checked for real, offline): the fallback loads
    settings = RerankSettings(
        rerank_model="no-such-org/no-such-reranker",
        fallback_model=str(tiny_cross_encoder),
        batch_size=2,
        max_length=512,
    )
    reranker = CrossEncoderReranker(settings)
    long_text = "circle area radius " * 200  # far past the model's 64 positions: truncated, no crash
    cands = [sc(1, "compost clay soil"), sc(2, "def circle area radius"), sc(3, long_text)]
    scores = reranker.score("circle area", cands)
    assert scores.shape == (3,) and np.isfinite(scores).all()
    assert reranker.model.max_seq_length == 64  # capped at what the model allows
    assert reranker.source == str(tiny_cross_encoder)

    # the same logits as a plain transformers forward pass over the (query, text) pairs
    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    batch = tokenizer(
        ["circle area"] * 3,
        [c.text for c in cands],
        truncation=True,
        max_length=64,
        padding=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        expected = model(**batch).logits[:, 0].numpy()
    assert scores == pytest.approx(expected.astype(float), abs=1e-4)
    assert len(set(np.round(scores, 6))) == 3  # a random model still tells these pairs apart

    one_by_one = CrossEncoderReranker(settings.model_copy(update={"batch_size": 1}))
    assert one_by_one.score("circle area", cands) == pytest.approx(scores, abs=1e-4)
    out = apply_rerank(cands, scores, reranker.name, 40)
    assert ids(out) == [cands[i].id for i in np.argsort(-scores, kind="stable")]

    shorter = CrossEncoderReranker(settings.model_copy(update={"max_length": 8}))
    assert shorter.score("circle area", cands[2:])[0] != pytest.approx(scores[2], abs=1e-6)


# -- HTTP API ----------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve("/rerank") as state:
        yield state


def api(url: str, **overrides: Any) -> ApiReranker:
    params: dict[str, Any] = {
        "api_url": url,
        "model": "rr-model",
        "timeout_seconds": 2.0,
        "retries": 1,
    }
    params.update(overrides)
    return ApiReranker(RerankSettings(**params), backoff=0.01)


def cohere(pairs: Sequence[tuple[int, float]]) -> bytes:
    return json.dumps({"id": "x", "results": [{"index": i, "relevance_score": s} for i, s in pairs]}).encode()


def test_payloads_and_response_shapes() -> None:
    assert rerank_payload("cohere", "m", "q", ["a", "b"]) == {
        "model": "m",
        "query": "q",
        "documents": ["a", "b"],
        "top_n": 2,
    }
    assert rerank_payload("tei", "m", "q", ["a"]) == {"query": "q", "texts": ["a"], "truncate": True}
    assert parse_rerank_response(cohere([(1, 0.9), (0, 0.2)]), 2).tolist() == [0.2, 0.9]
    assert parse_rerank_response(b'[{"index": 0, "score": -1.5}]', 1).tolist() == [-1.5]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "malformed JSON"),
        (b'{"message": "bad model"}', "no results list"),
        (b'{"results": [{"index": 5, "relevance_score": 1}]}', "malformed result"),
        (b'{"results": [{"index": 0, "relevance_score": "high"}]}', "malformed result"),
        (b'{"results": [{"index": 0, "relevance_score": 1}]}', "scored 1 of 2"),
    ],
)
def test_bad_answers_are_value_errors(body: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rerank_response(body, 2)


def test_cohere_request_auth_and_scores_by_index(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RERANK_API_KEY", "sekret")
    server.replies = [(200, cohere([(2, 0.7), (0, 0.1), (1, 0.5)]))]
    cands = [sc(1, "a"), sc(2, "b"), sc(3, "c")]
    assert api(server.url).score("query", cands).tolist() == [0.1, 0.5, 0.7]
    (request,) = server.requests
    assert request["path"] == "/rerank"
    assert request["headers"]["Authorization"] == "Bearer sekret"
    assert json.loads(request["body"]) == {
        "model": "rr-model",
        "query": "query",
        "documents": ["a", "b", "c"],
        "top_n": 3,
    }


def test_tei_shape_in_batches(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RERANK_API_KEY", raising=False)
    server.replies = [
        (200, b'[{"index": 1, "score": 2.0}, {"index": 0, "score": 1.0}]'),
        (200, b'[{"index": 0, "score": 3.0}]'),
    ]
    reranker = api(server.url, api_format="tei", batch_size=2)
    assert reranker.score("q", [sc(1, "a"), sc(2, "b"), sc(3, "c")]).tolist() == [1.0, 2.0, 3.0]
    bodies = [json.loads(r["body"]) for r in server.requests]
    assert bodies == [
        {"query": "q", "texts": ["a", "b"], "truncate": True},
        {"query": "q", "texts": ["c"], "truncate": True},
    ]
    assert "Authorization" not in server.requests[0]["headers"]
    assert reranker.score("q", []).shape == (0,) and len(server.requests) == 2


def test_503_then_success_is_retried(server: FakeServer) -> None:
    server.replies = [(503, b"busy"), (200, cohere([(0, 0.3)]))]
    assert api(server.url).score("q", [sc(1)]).tolist() == [0.3]
    assert len(server.requests) == 2


def test_persistent_5xx_is_one_clear_error(server: FakeServer) -> None:
    server.replies = [(500, b'{"error": "boom"}')]
    with pytest.raises(RemoteServiceError) as info:
        api(server.url, retries=2).score("q", [sc(1)])
    assert str(info.value) == f'reranker at {server.url} answered HTTP 500: {{"error": "boom"}} (3 attempts)'
    assert len(server.requests) == 3


def test_client_error_and_bad_body_are_not_retried(server: FakeServer) -> None:
    server.replies = [(422, b'{"message": "too many documents"}')]
    with pytest.raises(RemoteServiceError, match="HTTP 422: .*too many documents"):
        api(server.url).score("q", [sc(1)])
    assert len(server.requests) == 1
    server.replies = [(200, b'{"results": []}')]
    with pytest.raises(RemoteServiceError, match="scored 0 of 1"):
        api(server.url).score("q", [sc(1)])
    assert len(server.requests) == 2


def test_timeout_is_an_error_and_fast(server: FakeServer) -> None:
    server.delay = 5.0
    server.replies = [(200, cohere([(0, 1.0)]))]
    start = time.perf_counter()
    with pytest.raises(RemoteServiceError, match=r"timed out after 0\.2s"):
        api(server.url, timeout_seconds=0.2, retries=0).score("q", [sc(1)])
    assert time.perf_counter() - start < 2.0


def test_connection_refused_after_retries() -> None:
    url = f"http://127.0.0.1:{closed_port()}/rerank"
    with pytest.raises(RemoteServiceError) as info:
        api(url).score("q", [sc(1)])
    assert str(info.value) == f"reranker at {url} unreachable: connection refused (2 attempts)"


@pytest.mark.parametrize("url", [None, ""])
def test_a_missing_api_url_is_a_config_error(url: str | None) -> None:
    with pytest.raises(ConfigError, match=r"rerank\.api_url is not set"):
        ApiReranker(RerankSettings(api_url=url))
