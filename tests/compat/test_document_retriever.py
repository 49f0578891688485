"""DocumentRetriever keeps the chat bot's contract: constructor, search, index lifecycle, LLM format.

Written from the documented behaviour of the original (issue 11, item 1), not from the code.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hybrid_rag.compat import (
    DocumentRetriever,
    IndexCorruptedError,
    IndexNotFoundError,
    SearchResult,
)
from hybrid_rag.errors import HybridRagError

NOT_FOUND = "Индекс не найден. Запустите /index"


class Generator:
    """The bot's embedding generator: ``generate(text) -> list[float]``, from a fixed table."""

    def __init__(self, vectors: dict[str, Any]) -> None:
        self.vectors = vectors
        self.calls: list[str] = []

    def generate(self, text: str) -> Any:
        self.calls.append(text)
        return self.vectors[text]


def chunk(number: int, embedding: list[float], source: str = "docs/a.md", text: str | None = None) -> dict:
    return {
        "chunk_id": f"{source}#{number}",
        "text": text if text is not None else f"text {number}",
        "source_file": source,
        "position": number,
        "embedding": embedding,
    }


def write_index(path: Path, chunks: list[dict], **fields: Any) -> Path:
    data = {"chunks": chunks, "indexed_at": "2024-06-01T12:00:00", "source_files": [], "config": {}}
    data.update(fields)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def cosine(a: list[float], b: list[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norms if norms else 0.0


VECTORS = [[3.0, 4.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0], [-1.0, -1.0, 0.0], [0.5, 0.5, 0.5]]


@pytest.fixture
def index_file(tmp_path: Path) -> Path:
    chunks = [chunk(i, v, source=f"docs/{'ab'[i % 2]}.md") for i, v in enumerate(VECTORS)]
    return write_index(tmp_path / "embeddings.json", chunks, config={"chunk_size": 500})


def test_constructor_takes_a_path_and_a_generator_and_reads_nothing(tmp_path: Path) -> None:
    generator = Generator({})
    retriever = DocumentRetriever(str(tmp_path / "missing.json"), generator)
    assert not retriever.is_index_loaded()
    assert generator.calls == []


def test_search_scores_are_plain_cosines_highest_first(index_file: Path) -> None:
    query = [2.0, 1.0, 0.5]
    retriever = DocumentRetriever(index_file, Generator({"q": query}))
    results = retriever.search("q", top_k=5)
    expected = sorted(((cosine(query, v), i) for i, v in enumerate(VECTORS)), key=lambda t: -t[0])
    assert [r.position for r in results] == [i for _, i in expected]
    for result, (score, _) in zip(results, expected, strict=True):
        assert isinstance(result, SearchResult)
        assert result.similarity_score == pytest.approx(score, abs=1e-12)
        assert isinstance(result.similarity_score, float)
    assert results[-1].similarity_score < 0  # opposite vectors score below zero, not clamped


def test_search_result_fields_come_from_the_chunk(index_file: Path) -> None:
    retriever = DocumentRetriever(index_file, Generator({"q": [1.0, 0.0, 0.0]}))
    best = retriever.search("q", top_k=1)[0]
    assert best == SearchResult(
        chunk_id="docs/b.md#1", text="text 1", source_file="docs/b.md", similarity_score=1.0, position=1
    )


def test_search_returns_top_k_and_three_by_default(index_file: Path) -> None:
    retriever = DocumentRetriever(index_file, Generator({"q": [1.0, 1.0, 1.0]}))
    assert len(retriever.search("q")) == 3
    assert len(retriever.search("q", top_k=1)) == 1
    assert len(retriever.search("q", top_k=50)) == len(VECTORS)
    assert retriever.search("q", top_k=0) == []


def test_search_embeds_the_query_text_with_the_generator(index_file: Path) -> None:
    generator = Generator({"как сбросить пароль": [1.0, 0.0, 0.0]})
    DocumentRetriever(index_file, generator).search("как сбросить пароль")
    assert generator.calls == ["как сбросить пароль"]


def test_a_generator_returning_a_numpy_array_works(index_file: Path) -> None:
    retriever = DocumentRetriever(index_file, Generator({"q": np.array([1.0, 0.0, 0.0], dtype=np.float32)}))
    assert retriever.search("q", top_k=1)[0].position == 1


def test_a_zero_vector_scores_zero(tmp_path: Path) -> None:
    path = write_index(tmp_path / "e.json", [chunk(0, [0.0, 0.0]), chunk(1, [1.0, 1.0])])
    queries = {"q": [1.0, 0.0], "negative": [-1.0, -0.5], "zero": [0.0, 0.0]}
    retriever = DocumentRetriever(path, Generator(queries))
    by_position = {r.position: r for r in retriever.search("q", top_k=2)}
    assert by_position[0].similarity_score == 0.0
    stored_zero = [r for r in retriever.search("negative", top_k=2) if r.position == 0]
    assert "(релевантность: 0.00)" in retriever.format_results_for_llm(stored_zero)  # never "-0.00"
    zero_query = retriever.search("zero", top_k=2)
    assert [(r.position, r.similarity_score) for r in zero_query] == [(0, 0.0), (1, 0.0)]
    assert retriever.format_results_for_llm(zero_query).count("(релевантность: 0.00)") == 2


def test_equal_scores_keep_file_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((42, 384)) * 0.1
    best = rng.standard_normal(384)
    copies = [3, 11, 20, 29, 40, 41]  # the last rows too: a BLAS kernel may round them differently
    vectors[copies] = best
    path = write_index(tmp_path / "e.json", [chunk(i, v.tolist()) for i, v in enumerate(vectors)])
    queries = {f"q{i}": (best + rng.standard_normal(384) * 0.05).tolist() for i in range(8)}
    retriever = DocumentRetriever(path, Generator(queries))
    for query in queries:
        results = retriever.search(query, top_k=len(copies))
        assert [r.position for r in results] == copies
        assert len({r.similarity_score for r in results}) == 1


def test_load_index_is_false_for_a_missing_file_and_true_once_read(index_file: Path, tmp_path: Path) -> None:
    missing = DocumentRetriever(tmp_path / "none.json", Generator({}))
    assert missing.load_index() is False
    assert not missing.is_index_loaded()
    present = DocumentRetriever(index_file, Generator({}))
    assert present.load_index() is True
    assert present.is_index_loaded()


def test_search_loads_the_index_on_first_use(index_file: Path) -> None:
    retriever = DocumentRetriever(index_file, Generator({"q": [1.0, 0.0, 0.0]}))
    retriever.search("q")
    assert retriever.is_index_loaded()


def test_search_without_an_index_file_says_to_run_index(tmp_path: Path) -> None:
    retriever = DocumentRetriever(tmp_path / "embeddings.json", Generator({"q": [1.0]}))
    with pytest.raises(IndexNotFoundError) as caught:
        retriever.search("q")
    assert str(caught.value) == NOT_FOUND
    assert isinstance(caught.value, HybridRagError)  # the CLI prints it as one line


def test_stats_without_an_index_file_raise_index_not_found(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError, match="^Индекс не найден. Запустите /index$"):
        DocumentRetriever(tmp_path / "embeddings.json", Generator({})).get_index_stats()


@pytest.mark.parametrize("content", [{"chunks": []}, {"indexed_at": "2024-06-01"}, {"chunks": None}])
def test_an_index_without_chunks_is_corrupted(tmp_path: Path, content: dict) -> None:
    path = tmp_path / "embeddings.json"
    path.write_text(json.dumps(content))
    retriever = DocumentRetriever(path, Generator({"q": [1.0]}))
    with pytest.raises(IndexCorruptedError):
        retriever.load_index()
    assert not retriever.is_index_loaded()
    with pytest.raises(IndexCorruptedError):
        retriever.search("q")


@pytest.mark.parametrize(
    "broken",
    [
        {"text": "no vector", "chunk_id": "x", "source_file": "a.md", "position": 1},
        chunk(1, ["0.1", "0.2"]),
        chunk(1, []),
        chunk(1, [1.0, 2.0, 3.0]),  # not the dimension of chunk 1
        {"embedding": [1.0, 0.0], "chunk_id": "x", "source_file": "a.md", "position": 1},  # no text
    ],
)
def test_a_broken_chunk_is_a_corrupted_index_naming_the_chunk(tmp_path: Path, broken: dict) -> None:
    path = write_index(tmp_path / "e.json", [chunk(0, [1.0, 0.0]), broken])
    with pytest.raises(IndexCorruptedError, match="chunk 2"):
        DocumentRetriever(path, Generator({})).load_index()


def test_a_file_that_is_not_json_is_a_corrupted_index(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.json"
    path.write_text('{"chunks": [')
    with pytest.raises(IndexCorruptedError, match="embeddings.json"):
        DocumentRetriever(path, Generator({})).load_index()


def test_the_originals_id_and_source_keys_are_read(tmp_path: Path) -> None:
    original = {"id": "c1", "text": "t", "source": "docs/x.md", "position": 4, "embedding": [1.0, 0.0]}
    path = write_index(tmp_path / "e.json", [original])
    result = DocumentRetriever(path, Generator({"q": [1.0, 0.0]})).search("q")[0]
    assert (result.chunk_id, result.source_file, result.position) == ("c1", "docs/x.md", 4)


def test_a_query_of_another_dimension_names_both_dimensions(index_file: Path) -> None:
    retriever = DocumentRetriever(index_file, Generator({"q": [1.0, 0.0]}))
    with pytest.raises(ValueError, match=r"dimension 2\b.*dimension 3\b"):
        retriever.search("q")


def test_index_stats_report_the_file(index_file: Path) -> None:
    stats = DocumentRetriever(index_file, Generator({})).get_index_stats()
    assert set(stats) == {"total_chunks", "indexed_at", "source_files", "config"}
    assert stats["total_chunks"] == len(VECTORS)
    assert stats["indexed_at"] == "2024-06-01T12:00:00"
    assert sorted(stats["source_files"]) == ["docs/a.md", "docs/b.md"]
    assert stats["config"] == {"chunk_size": 500}


def test_index_stats_default_config_is_an_empty_dict(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"chunks": [chunk(0, [1.0])]}))
    stats = DocumentRetriever(path, Generator({})).get_index_stats()
    assert stats["config"] == {}
    assert stats["indexed_at"] is None


def test_results_are_formatted_for_the_llm_byte_for_byte() -> None:
    results = [
        SearchResult("a#0", "Первый абзац.", "a.md", 0.956, 0),
        SearchResult("b#3", "Second chunk\nwith two lines", "docs/b.md", 0.5, 3),
        SearchResult("c#1", "last\n\n", "c.md", 1.0, 1),
    ]
    expected = (
        "Найденные документы:\n\n"
        "[1] Источник: a.md (релевантность: 0.96)\nПервый абзац.\n\n"
        "[2] Источник: docs/b.md (релевантность: 0.50)\nSecond chunk\nwith two lines\n\n"
        "[3] Источник: c.md (релевантность: 1.00)\nlast"
    )
    assert DocumentRetriever("unused.json", Generator({})).format_results_for_llm(results) == expected


@pytest.mark.parametrize(
    ("score", "shown"), [(0.96, "0.96"), (0.123456, "0.12"), (0.0, "0.00"), (-0.25, "-0.25"), (0.999, "1.00")]
)
def test_relevance_has_two_decimals(score: float, shown: str) -> None:
    text = DocumentRetriever("unused.json", Generator({})).format_results_for_llm(
        [SearchResult("x", "t", "s.md", score, 0)]
    )
    assert text == f"Найденные документы:\n\n[1] Источник: s.md (релевантность: {shown})\nt"


def test_no_results_format_as_the_header_alone() -> None:
    assert (
        DocumentRetriever("unused.json", Generator({})).format_results_for_llm([]) == "Найденные документы:"
    )


def set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, ns=(seconds * 10**9, seconds * 10**9))


def test_a_changed_file_is_reloaded_on_the_next_search(tmp_path: Path) -> None:
    path = write_index(tmp_path / "e.json", [chunk(0, [1.0, 0.0], text="old")])
    set_mtime(path, 1_700_000_000)
    retriever = DocumentRetriever(path, Generator({"q": [1.0, 0.0]}))
    assert retriever.search("q")[0].text == "old"
    write_index(path, [chunk(0, [1.0, 0.0], text="new"), chunk(1, [0.0, 1.0])])
    set_mtime(path, 1_700_000_100)
    assert retriever.search("q")[0].text == "new"
    assert retriever.get_index_stats()["total_chunks"] == 2


def test_an_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    path = write_index(tmp_path / "e.json", [chunk(0, [1.0, 0.0], text="aaa")])
    set_mtime(path, 1_700_000_000)
    retriever = DocumentRetriever(path, Generator({"q": [1.0, 0.0]}))
    assert retriever.search("q")[0].text == "aaa"
    write_index(path, [chunk(0, [1.0, 0.0], text="bbb")])  # same size, mtime put back
    set_mtime(path, 1_700_000_000)
    assert retriever.search("q")[0].text == "aaa"


def test_a_file_changed_into_a_broken_one_raises_on_the_next_search(tmp_path: Path) -> None:
    path = write_index(tmp_path / "e.json", [chunk(0, [1.0, 0.0])])
    set_mtime(path, 1_700_000_000)
    retriever = DocumentRetriever(path, Generator({"q": [1.0, 0.0]}))
    retriever.search("q")
    write_index(path, [])
    set_mtime(path, 1_700_000_100)
    with pytest.raises(IndexCorruptedError):
        retriever.search("q")


def test_a_deleted_file_keeps_the_loaded_index(tmp_path: Path) -> None:
    path = write_index(tmp_path / "e.json", [chunk(0, [1.0, 0.0])])
    retriever = DocumentRetriever(path, Generator({"q": [1.0, 0.0]}))
    retriever.search("q")
    path.unlink()
    assert retriever.load_index() is False
    assert retriever.is_index_loaded()
    assert len(retriever.search("q")) == 1


def test_index_stats_return_the_config_as_written(tmp_path: Path) -> None:
    config = {"model": "m", "probe": {"text": "t", "embedding": [0.5, 0.25]}, "sizes": [500, 800]}
    path = write_index(tmp_path / "e.json", [chunk(0, [1.0, 0.0]), chunk(1, [0.0, 1.0])], config=config)
    retriever = DocumentRetriever(path, Generator({"q": [0.0, 1.0]}))
    assert retriever.get_index_stats()["config"] == config
    assert [r.position for r in retriever.search("q", top_k=2)] == [1, 0]
