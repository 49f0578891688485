"""Routing: the code-query detector on clear cases and on two real query sets; per-type score floors."""

from __future__ import annotations

import json

import pytest
from judged_datasets import judged_dataset

from hybrid_rag.filters import Compare
from hybrid_rag.retrieval.routing import (
    CODE_QUERY_THRESHOLD,
    code_query_evidence,
    code_query_score,
    code_route_filter,
    looks_like_code_query,
)
from hybrid_rag.retrieval.thresholds import apply_min_scores
from hybrid_rag.types import Chunk, ScoredChunk, SourceType

CODE = [
    "getFileName",
    "where is DataFrame created",
    "read_csv skips the header",
    "os.path.join with a trailing slash",
    "np.array(x) copies",
    "call open() twice",
    "std::vector push back",
    "lambda x -> x + 1",
    "error in setup.py",
    "how to flatten a list in python",
    "java interface",
    "regex to match an email string",
    "raise exception from import error",
    "what does --no-cache do",
    "C++ templates",
]
TEXT = [
    "",
    "what is the lift of a swept wing at transonic speeds",
    "method of characteristics for supersonic flow",
    "transfer function of a wing",
    "buckling of thin cylindrical shells",
    "is there a method (i.e. a simple one) for the blasius problem",
    "heat input that is exponential (in time)",
    "how do I return a rental car",
    "class schedule for the spring term",
    "history of the Roman empire",
    "rust on a bicycle chain",
]


@pytest.mark.parametrize("query", CODE)
def test_code_queries_are_flagged(query):
    assert looks_like_code_query(query), code_query_evidence(query)


@pytest.mark.parametrize("query", TEXT)
def test_prose_queries_are_not_flagged(query):
    assert not looks_like_code_query(query), code_query_evidence(query)


def test_the_score_adds_distinct_evidence():
    assert code_query_evidence("flatten a list") == {"list": 1.0}
    assert code_query_score("flatten a list") == 1.0 < CODE_QUERY_THRESHOLD
    assert code_query_score("sort a list, sort a list") == 2.0  # each word counts once
    assert code_query_evidence("python getFileName") == {"python": 2.0, "camelCase": 2.0}
    assert code_query_evidence("rust") == {"rust": 1.0}  # an English word too: weak
    assert looks_like_code_query("flatten a list", threshold=1.0)
    assert not looks_like_code_query("getFileName", threshold=3.0)


def test_known_limits_of_a_word_score():
    # two programming words that prose also uses add up to the threshold: a false positive
    assert looks_like_code_query("transfer function of the control loop")
    # a query naming a language is code even when prose would answer it
    assert looks_like_code_query("python installation guide")
    # a code question in plain words, without a language or a jargon word, is missed
    assert not looks_like_code_query("how to flatten a nested list")


def test_code_route_filter():
    assert code_route_filter("python read file") == Compare("source_type", "=", "code")
    assert code_route_filter("history of aviation") is None


def _load(name: str) -> list[str]:
    path = judged_dataset(name) / "queries.jsonl"
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.slow
def test_share_flagged_on_real_query_sets():
    """Web queries about Python code (CoSQA) vs aerodynamics questions (Cranfield).

    Measured: cosqa 313/313 (100%), cranfield 0/225 (0%). Most CoSQA queries name Python; with
    the language names removed only 52/313 (17%) are flagged (web queries rarely hold identifiers).
    """
    cosqa, cranfield = _load("cosqa"), _load("cranfield")
    code_share = sum(map(looks_like_code_query, cosqa)) / len(cosqa)
    text_share = sum(map(looks_like_code_query, cranfield)) / len(cranfield)
    assert code_share >= 0.9
    assert text_share <= 0.05


def _result(source_type: SourceType, score: float, i: int) -> ScoredChunk:
    chunk = Chunk(i, 1, f"/f{i}", 0, 1, 1, "x", 1, "0" * 64, source_type, "text", "default")
    return ScoredChunk(chunk, score)


def test_apply_min_scores_per_source_type():
    results = [
        _result(SourceType.CODE, 0.9, 1),
        _result(SourceType.TEXT, 0.4, 2),
        _result(SourceType.CODE, 0.2, 3),
        _result(SourceType.TEXT, 0.6, 4),
        _result(SourceType.CODE, 0.5, 5),
    ]
    ids = lambda rs: [r.id for r in rs]  # noqa: E731
    assert ids(apply_min_scores(results, None, None)) == [1, 2, 3, 4, 5]
    assert ids(apply_min_scores(results, 0.5, None)) == [1, 2, 4, 5]  # the floor itself is kept
    assert ids(apply_min_scores(results, None, 0.5)) == [1, 3, 4, 5]
    assert ids(apply_min_scores(results, 0.95, 0.95)) == []
    assert ids(apply_min_scores(results, -1.0, 0.0)) == [1, 2, 3, 4, 5]  # negative floors work
    assert apply_min_scores([], 0.5, 0.5) == []
