"""``DocumentRetriever``: the chat bot's cosine search over an ``embeddings.json``, same contract.

The file (written by the bot's ``/index`` command)::

    {"chunks": [{"chunk_id": "a.md#0", "text": "...", "source_file": "docs/a.md",
                 "position": 0, "embedding": [0.12, -0.03, ...]}, ...],
     "indexed_at": "2024-06-01T12:00:00", "source_files": ["docs/a.md"], "config": {...}}

``id`` is read where ``chunk_id`` is absent and ``source`` where ``source_file`` is (the
original's own key names). Every chunk needs an id, text, source, position and an embedding, all
embeddings of one length; anything else is an ``IndexCorruptedError`` naming the chunk.

What differs from the original on purpose: the vectors go into one float64 matrix as the file is
parsed (a quarter of the memory of Python lists) and are scored by one matrix product (same
scores within 1e-12, same order, ties in file order); the file is checked when loaded,
not half-way through a search; a query vector of another dimension is a ``ValueError`` naming
both dimensions; a reload is logged (``logging.INFO``) instead of printed; ``source_files`` in
the stats keeps first-seen order instead of a set's.

    retriever = DocumentRetriever("data/embeddings.json", generator)  # generator.generate(text)
    print(retriever.format_results_for_llm(retriever.search("как сбросить пароль", top_k=3)))
"""

from __future__ import annotations

import json
import logging
import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hybrid_rag.compat.cosine import CosineScorer, is_vector, top_indices
from hybrid_rag.errors import CorruptIndexError, HybridRagError, NoIndexError

logger = logging.getLogger(__name__)

INDEX_NOT_FOUND = "Индекс не найден. Запустите /index"
INDEX_CORRUPTED = "Индекс пуст или поврежден"
DEFAULT_TOP_K = 3


class RetrieverError(HybridRagError):
    """Base class of the retriever's errors (as in the original)."""


class IndexNotFoundError(RetrieverError, NoIndexError):
    """No index file yet: the bot's ``/index`` command has not been run."""

    def __init__(self, message: str = INDEX_NOT_FOUND) -> None:
        super().__init__(message)


class IndexCorruptedError(RetrieverError, CorruptIndexError):
    """The index file is empty (no chunks), not JSON, or has a broken chunk."""


class EmbeddingGenerator(Protocol):
    """What the retriever needs from the bot's embedding generator."""

    def generate(self, text: str) -> Any:
        """One vector (a list of floats or a 1-D array) for ``text``."""
        ...


@dataclass
class SearchResult:
    """One chunk found by ``search``; mutable, as the original's."""

    chunk_id: str
    text: str
    source_file: str
    similarity_score: float
    position: int


@dataclass(frozen=True)
class _Chunk:
    chunk_id: Any
    text: Any
    source_file: Any
    position: Any


@dataclass(frozen=True)
class _LoadedIndex:
    stamp: tuple[int, int]  # (mtime in ns, size) of the file read
    chunks: list[_Chunk]
    scorer: CosineScorer
    indexed_at: Any
    config: Any


def _corrupted(path: Path, detail: str) -> IndexCorruptedError:
    return IndexCorruptedError(f"{INDEX_CORRUPTED}: {path}: {detail}")


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def _field(chunk: dict[str, Any], names: tuple[str, ...], number: int, path: Path) -> Any:
    for name in names:
        if name in chunk:
            return chunk[name]
    raise _corrupted(path, f"chunk {number} has no {' or '.join(repr(n) for n in names)}")


class _VectorRow(int):
    """Stands in a parsed chunk for its embedding: the row of that vector in the collector's buffer."""


class _VectorCollector:
    """A ``json.load`` object hook that moves each chunk's embedding (an object with ``text`` and
    an ``embedding`` vector) into one flat float64 buffer as the file is parsed, so the vectors
    never all exist as Python floats at once (32 bytes each, and memory the allocator keeps)."""

    def __init__(self) -> None:
        self.buffer = array("d")
        self.dimension = 0
        self.rows = 0

    def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        embedding = obj.get("embedding")
        if "text" in obj and is_vector(embedding) and len(embedding) == (self.dimension or len(embedding)):
            self.dimension = len(embedding)
            self.buffer.extend(embedding)
            obj["embedding"] = _VectorRow(self.rows)
            self.rows += 1
        return obj  # a vector of another dimension stays a list, for the check to name it

    def restore(self, value: Any) -> Any:
        """``value`` with every collected embedding in it turned back into its list (for the
        vector-like objects found outside the chunks, e.g. in ``config``)."""
        if isinstance(value, dict):
            return {key: self.restore(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.restore(item) for item in value]
        if isinstance(value, _VectorRow):
            start = value * self.dimension
            return self.buffer[start : start + self.dimension].tolist()
        return value


def read_index(path: Path) -> _LoadedIndex:
    """Parse and check an ``embeddings.json`` (FileNotFoundError if it is missing)."""
    stamp = _stamp(path)
    collector = _VectorCollector()
    try:
        with path.open(encoding="utf-8-sig") as handle:
            data = json.load(handle, object_hook=collector)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _corrupted(path, f"not a JSON file ({exc})") from None
    chunks = data.get("chunks") if isinstance(data, dict) else None
    if not chunks:
        raise _corrupted(path, "no chunks")
    if not isinstance(chunks, list):
        raise _corrupted(path, f"'chunks' must be a list, got {type(chunks).__name__}")
    records: list[_Chunk] = []
    rows: list[int] = []
    for number, chunk in enumerate(chunks, 1):
        if not isinstance(chunk, dict):
            raise _corrupted(path, f"chunk {number} is not a JSON object")
        record = _Chunk(
            chunk_id=_field(chunk, ("chunk_id", "id"), number, path),
            text=_field(chunk, ("text",), number, path),
            source_file=_field(chunk, ("source_file", "source"), number, path),
            position=_field(chunk, ("position",), number, path),
        )
        embedding = _field(chunk, ("embedding",), number, path)
        if not isinstance(embedding, _VectorRow):
            detail = "is not a non-empty list of finite numbers"
            if is_vector(embedding):
                detail = f"has dimension {len(embedding)}, the first chunk's has {collector.dimension}"
            raise _corrupted(path, f"chunk {number}: the embedding {detail}")
        records.append(record)
        rows.append(embedding)
    indexed_at, config = collector.restore(data.get("indexed_at")), collector.restore(data.get("config", {}))
    matrix = np.frombuffer(collector.buffer, dtype=np.float64).reshape(-1, collector.dimension)
    if rows != list(range(len(matrix))):  # vector-like objects outside the chunks
        matrix = matrix[rows]
    return _LoadedIndex(
        stamp=stamp,
        chunks=records,
        scorer=CosineScorer(matrix, source=str(path)),  # normalises the buffer in place
        indexed_at=indexed_at,
        config=config,
    )


class DocumentRetriever:
    """Top-k chunks of an ``embeddings.json`` by cosine with the query's vector.

    The constructor only stores its arguments; the file is read on first use and read again
    whenever its modification time (or size) changes.
    """

    DEFAULT_TOP_K = DEFAULT_TOP_K

    def __init__(
        self, embeddings_path: str | os.PathLike[str], embedding_generator: EmbeddingGenerator
    ) -> None:
        self._embeddings_path = Path(embeddings_path)
        self._embedding_generator = embedding_generator
        self._index: _LoadedIndex | None = None

    def search(self, query: str, top_k: int = DEFAULT_TOP_K) -> list[SearchResult]:
        """The ``top_k`` chunks most similar to ``query``, highest first (``[]`` if ``top_k <= 0``).

        Raises IndexNotFoundError when there is no index file, IndexCorruptedError for a broken
        one, ValueError when the query vector's dimension is not the index's.
        """
        index = self._current_index()
        scores = index.scorer.scores(self._embedding_generator.generate(query))
        results = []
        for i in top_indices(scores, top_k):
            chunk = index.chunks[i]
            results.append(
                SearchResult(chunk.chunk_id, chunk.text, chunk.source_file, float(scores[i]), chunk.position)
            )
        return results

    def load_index(self) -> bool:
        """Read the file now: False when it does not exist (a loaded index is then kept), True when
        read; IndexCorruptedError (and the previous index kept) when it is empty or broken."""
        try:
            self._index = read_index(self._embeddings_path)
        except FileNotFoundError:
            return False
        return True

    def is_index_loaded(self) -> bool:
        return self._index is not None

    def get_index_stats(self) -> dict[str, Any]:
        """``total_chunks``, ``indexed_at``, ``source_files`` (distinct chunk sources, first-seen
        order) and ``config`` of the index, loading or reloading it first."""
        index = self._current_index()
        return {
            "total_chunks": len(index.chunks),
            "indexed_at": index.indexed_at,
            "source_files": list(dict.fromkeys(chunk.source_file for chunk in index.chunks)),
            "config": index.config,
        }

    def format_results_for_llm(self, results: list[SearchResult]) -> str:
        """The context block the bot sends to the LLM, byte for byte the original's::

        Найденные документы:

        [1] Источник: docs/a.md (релевантность: 0.96)
        <text>
        """
        output = "Найденные документы:\n\n"
        for i, result in enumerate(results, 1):
            output += f"[{i}] Источник: {result.source_file} "
            output += f"(релевантность: {result.similarity_score:.2f})\n"
            output += f"{result.text}\n\n"
        return output.strip()

    def _current_index(self) -> _LoadedIndex:
        """The loaded index, (re)read first if it is not loaded or the file changed on disk."""
        if self._index is None:
            self.load_index()
        else:
            try:
                changed = _stamp(self._embeddings_path) != self._index.stamp
            except FileNotFoundError:
                changed = False  # the file went away: keep serving what was loaded
            if changed:
                logger.info("%s changed on disk: reloading the index", self._embeddings_path)
                self.load_index()
        if self._index is None:
            raise IndexNotFoundError()
        return self._index
