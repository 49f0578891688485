"""EmbeddingStore keeps the original's contract: cached rows, vector filtering, cosine search.

Written from the documented behaviour of the original (issue 11, item 2), not from the code.
"""

from __future__ import annotations

import builtins
import io
import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hybrid_rag.compat import EmbeddingStore
from hybrid_rag.errors import InputError
from hybrid_rag.models.embedders import FakeEmbedder

ROWS = [
    {"id": "a", "text": "alpha", "collection": "docs", "tags": ["x"], "embedding": [1.0, 0.0, 0.0]},
    {"id": "b", "text": "beta", "collection": "faq", "entity": "user", "embedding": [1, 1, 0]},
    {"doc_id": "c", "text": "gamma", "embedding": [0.0, 0.0, 3.0]},
    {"id": "d", "text": "delta", "embedding": [-2.0, 0.5, 0.0]},
    {"id": "e", "text": "epsilon", "embedding": [0.2, 0.9, 0.4]},
    {"id": "f", "text": "zeta", "embedding": [0.7, -0.1, 0.1]},
    {"id": "g", "text": "eta", "embedding": [0.3, 0.3, 0.3]},
]


def write_rows(path: Path, rows: list[Any], manifest: dict | None = None) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    if manifest is not None:
        (path.parent / "manifest.json").write_text(json.dumps(manifest))
    return path


def set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, ns=(seconds * 10**9, seconds * 10**9))


def expected_cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.hypot(*a), math.hypot(*b)
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / (na * nb) if na and nb else 0.0


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    return write_rows(tmp_path / "embeddings.jsonl", ROWS, manifest={"model": "m", "dim": 3})


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each file (by real path) is opened for reading from now on."""
    counts: Counter[str] = Counter()
    real_open = io.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        mode = args[0] if args else kwargs.get("mode", "r")
        if isinstance(file, (str, os.PathLike)) and "r" in mode:
            counts[os.path.realpath(file)] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    return counts


class Embedder:
    """An embeddings client like the original's ``OllamaClient``: ``embed(texts) -> [[float]]``."""

    def __init__(self, answer: Any = None, error: Exception | None = None) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[Any] = []

    def embed(self, texts: list[str]) -> Any:
        self.calls.append(texts)
        if self.error is not None:
            raise self.error
        return self.answer


def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        EmbeddingStore(tmp_path / "embeddings.jsonl")


def test_rows_with_vectors_keeps_only_non_empty_numeric_embeddings(tmp_path: Path) -> None:
    good = [{"id": 1, "embedding": [1, 2.5]}, {"id": 5, "embedding": [0, 0]}]
    bad = [
        {"id": 2},
        {"id": 3, "embedding": []},
        {"id": 4, "embedding": None},
        {"id": 6, "embedding": "0.1,0.2"},
        {"id": 7, "embedding": ["0.1", 0.2]},
        {"id": 8, "embedding": [[0.1, 0.2]]},
        {"id": 9, "embedding": [True, 0.2]},
        {"id": 10, "embedding": {"0": 0.1}},
    ]
    path = write_rows(tmp_path / "e.jsonl", [good[0], *bad, good[1]])
    with path.open("a") as handle:
        handle.write('{"id": 11, "embedding": [NaN, 1.0]}\n')
    store = EmbeddingStore(path)
    assert store.rows_with_vectors() == good
    assert [r["id"] for r in store.search_by_vector([1.0, 1.0], k=20)] == [1, 5]


def test_search_scores_are_cosines_highest_first(store_file: Path) -> None:
    query = [0.6, 0.8, 0.1]
    results = EmbeddingStore(store_file).search_by_vector(query, k=len(ROWS))
    expected = sorted((expected_cosine(query, r["embedding"]) for r in ROWS), reverse=True)
    assert [r["score"] for r in results] == pytest.approx(expected, abs=1e-12)
    assert results[-1]["score"] < 0
    assert all(isinstance(r["score"], float) for r in results)


def test_each_result_is_the_score_plus_the_rows_own_fields(store_file: Path) -> None:
    best = EmbeddingStore(store_file).search_by_vector([1.0, 1.0, 0.0], k=1)[0]
    assert best == {"score": pytest.approx(1.0), **ROWS[1]}
    assert next(iter(best)) == "score"


def test_k_defaults_to_five(store_file: Path) -> None:
    store = EmbeddingStore(store_file)
    assert len(store.search_by_vector([1.0, 0.0, 0.0])) == 5
    assert len(store.search_by_vector([1.0, 0.0, 0.0], k=2)) == 2
    assert store.search_by_vector([1.0, 0.0, 0.0], k=0) == []


def test_min_score_is_applied_before_k(store_file: Path) -> None:
    store = EmbeddingStore(store_file)
    query = [1.0, 0.0, 0.0]
    everything = store.search_by_vector(query, k=len(ROWS))
    above = [r for r in everything if r["score"] >= 0.5]
    assert 1 < len(above) < 5
    assert store.search_by_vector(query, k=5, min_score=0.5) == above
    assert store.search_by_vector(query, k=1, min_score=0.5) == above[:1]
    assert store.search_by_vector(query, min_score=1.5) == []


def test_min_score_keeps_a_score_equal_to_it(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path / "e.jsonl", [{"id": "zero", "embedding": [0.0, 0.0]}, {"id": "neg", "embedding": [-1, 0]}]
    )
    results = EmbeddingStore(path).search_by_vector([1.0, 0.0], min_score=0.0)
    assert [(r["id"], r["score"]) for r in results] == [("zero", 0.0)]


def test_a_zero_query_scores_every_row_zero_in_file_order(store_file: Path) -> None:
    results = EmbeddingStore(store_file).search_by_vector([0.0, 0.0, 0.0], k=3)
    assert [r["score"] for r in results] == [0.0, 0.0, 0.0]
    assert [r["text"] for r in results] == ["alpha", "beta", "gamma"]


def test_equal_scores_keep_file_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 384)) * 0.1
    best = rng.standard_normal(384)
    copies = [1, 14, 22, 37, 48, 49]  # the last rows too: a BLAS kernel may round them differently
    vectors[copies] = best
    path = write_rows(
        tmp_path / "e.jsonl", [{"n": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
    )
    store = EmbeddingStore(path)
    for _ in range(8):
        results = store.search_by_vector((best * 2 + rng.standard_normal(384) * 0.1).tolist(), k=len(copies))
        assert [r["n"] for r in results] == copies
        assert len({r["score"] for r in results}) == 1


def test_a_query_of_another_dimension_names_both_dimensions(store_file: Path) -> None:
    with pytest.raises(ValueError, match=r"dimension 4\b.*dimension 3\b"):
        EmbeddingStore(store_file).search_by_vector([1.0, 0.0, 0.0, 0.0])


def test_stored_vectors_of_several_dimensions_are_an_error(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "e.jsonl", [{"embedding": [1.0, 0.0]}, {"embedding": [1.0, 0.0, 0.0]}])
    with pytest.raises(ValueError, match="several dimensions"):
        EmbeddingStore(path).search_by_vector([1.0, 0.0])


def test_a_file_without_vectors_finds_nothing(tmp_path: Path) -> None:
    store = EmbeddingStore(write_rows(tmp_path / "e.jsonl", [{"id": 1, "embedding": []}]))
    assert store.rows_with_vectors() == []
    assert store.search_by_vector([1.0, 0.0]) == []


def test_a_line_that_is_not_a_json_object_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"id": 1, "embedding": [1.0]}\n\n{"id": 2, "embedding": [1.0]\n')
    with pytest.raises(InputError, match=r"e\.jsonl:3\b"):
        EmbeddingStore(path)
    path.write_text('{"id": 1, "embedding": [1.0]}\n[1.0, 2.0]\n')
    with pytest.raises(InputError, match=r"e\.jsonl:2\b"):
        EmbeddingStore(path)


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('\n{"id": 1, "embedding": [1.0]}\n   \n{"id": 2, "embedding": [2.0]}\n')
    assert [r["id"] for r in EmbeddingStore(path).rows_with_vectors()] == [1, 2]


def test_a_rows_own_score_field_is_replaced_by_the_similarity(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "e.jsonl", [{"id": 1, "score": 99, "embedding": [1.0, 0.0]}])
    assert EmbeddingStore(path).search_by_vector([1.0, 0.0]) == [
        {"score": 1.0, "id": 1, "embedding": [1.0, 0.0]}
    ]


def test_search_by_text_embeds_the_text_and_searches_its_vector(store_file: Path) -> None:
    embedder = Embedder(answer=[[0.0, 1.0, 0.1]])
    store = EmbeddingStore(store_file)
    assert store.search_by_text("how?", embedder, k=2) == store.search_by_vector([0.0, 1.0, 0.1], k=2)
    assert embedder.calls == [["how?"]]


def test_search_by_text_takes_a_numpy_answer(store_file: Path) -> None:
    store = EmbeddingStore(store_file)
    results = store.search_by_text("q", Embedder(answer=np.array([[0.0, 0.0, 1.0]], dtype=np.float32)), k=1)
    assert results[0]["doc_id"] == "c"


def test_search_by_text_takes_a_hybrid_rag_embedder(tmp_path: Path) -> None:
    embedder = FakeEmbedder(dimension=16)
    texts = ["tomatoes need full sun", "compost improves clay soil", "earthworms like organic matter"]
    rows = [
        {"text": t, "embedding": v.tolist()}
        for t, v in zip(texts, embedder.embed_passages(texts), strict=True)
    ]
    store = EmbeddingStore(write_rows(tmp_path / "e.jsonl", rows))
    assert store.search_by_text("clay soil compost", embedder, k=1)[0]["text"] == texts[1]


@pytest.mark.parametrize(
    "embedder",
    [
        Embedder(error=ConnectionError("ollama is down")),
        Embedder(error=KeyError("embeddings")),
        Embedder(answer=[]),
        Embedder(answer=None),
        Embedder(answer=[[]]),
        object(),  # no embed method at all
    ],
)
def test_search_by_text_gives_nothing_when_the_embedder_fails(store_file: Path, embedder: Any) -> None:
    assert EmbeddingStore(store_file).search_by_text("q", embedder) == []


def test_an_unchanged_file_is_read_once_per_process(store_file: Path, reads: Counter[str]) -> None:
    first = EmbeddingStore(store_file)
    second = EmbeddingStore(store_file)
    third = EmbeddingStore(store_file.parent / ".." / store_file.parent.name / store_file.name)
    assert reads[os.path.realpath(store_file)] == 1
    assert first.rows_with_vectors() == second.rows_with_vectors() == third.rows_with_vectors()


def test_a_file_changed_on_disk_is_read_again(store_file: Path, reads: Counter[str]) -> None:
    set_mtime(store_file, 1_700_000_000)
    assert len(EmbeddingStore(store_file).rows_with_vectors()) == len(ROWS)
    write_rows(store_file, ROWS[:2])
    set_mtime(store_file, 1_700_000_100)
    assert len(EmbeddingStore(store_file).rows_with_vectors()) == 2
    assert reads[os.path.realpath(store_file)] == 2


def test_the_cache_is_keyed_by_mtime_not_by_content(store_file: Path) -> None:
    set_mtime(store_file, 1_700_000_000)
    EmbeddingStore(store_file)
    text = store_file.read_text()
    store_file.write_text(text.replace('"alpha"', '"ALPHA"'))  # same size
    set_mtime(store_file, 1_700_000_000)
    assert EmbeddingStore(store_file).rows_with_vectors()[0]["text"] == "alpha"
    set_mtime(store_file, 1_700_000_001)
    assert EmbeddingStore(store_file).rows_with_vectors()[0]["text"] == "ALPHA"


def test_a_changed_manifest_makes_the_file_read_again(store_file: Path, reads: Counter[str]) -> None:
    set_mtime(store_file, 1_700_000_000)
    EmbeddingStore(store_file)
    (store_file.parent / "manifest.json").write_text(json.dumps({"model": "other", "dim": 3}))
    EmbeddingStore(store_file)
    assert reads[os.path.realpath(store_file)] == 2


def test_a_manifest_appearing_makes_the_file_read_again(tmp_path: Path, reads: Counter[str]) -> None:
    path = write_rows(tmp_path / "e.jsonl", ROWS)
    EmbeddingStore(path)
    EmbeddingStore(path)
    (tmp_path / "manifest.json").write_text("{}")
    EmbeddingStore(path)
    assert reads[os.path.realpath(path)] == 2


def test_a_store_is_a_snapshot_of_its_file(store_file: Path) -> None:
    set_mtime(store_file, 1_700_000_000)
    store = EmbeddingStore(store_file)
    write_rows(store_file, ROWS[:1])
    set_mtime(store_file, 1_700_000_100)
    assert len(store.rows_with_vectors()) == len(ROWS)
    assert len(EmbeddingStore(store_file).rows_with_vectors()) == 1
