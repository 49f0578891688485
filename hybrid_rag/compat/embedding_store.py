"""``EmbeddingStore``: cosine search over an ``embeddings.jsonl``, the original's contract.

The file is one JSON object a line: an ``embedding`` (a list of numbers) and any other fields,
returned as they are (``id``/``doc_id``, ``text``, ``collection``, ``entity``, ``tags``,
``source``...)::

    {"id": "faq-1", "text": "Reset a password from the login page.", "collection": "faq",
     "tags": ["account"], "embedding": [0.12, -0.03, ...]}

A ``manifest.json`` beside it (the embedder's name, dimension...) is not interpreted; its hash
is part of the cache key, so re-embedding the collection (a new manifest) is always seen.

Rows are cached per process, per (resolved path, sha256 of the sibling ``manifest.json``, file
mtime and size): an unchanged file is parsed once per process however many stores are built
over it; a changed file or manifest is parsed again. A store is a snapshot of its file when it
was built.

What differs from the original on purpose: vectors are scored by one numpy matrix product (same
scores within 1e-12, same order); a query of another dimension than the stored vectors, or a file
whose vectors have several dimensions, is a ``ValueError`` naming them (the original's ``zip``
truncated the longer vector silently); ``true``/``false``, NaN and infinite values make a vector
unusable (skipped like an empty one); a line that is not a JSON object is an ``InputError`` naming
the line (blank lines are skipped); a row's own ``score`` field is replaced by the similarity;
``k <= 0`` gives ``[]``; ``search_by_text`` also takes an embedder with ``embed_queries`` (a
hybrid-rag embedder).
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.compat.cosine import CosineScorer, is_vector, matrix_of, top_indices
from hybrid_rag.errors import InputError
from hybrid_rag.indices.files import file_sha256
from hybrid_rag.jsonlines import read_json_lines

MANIFEST_FILE = "manifest.json"
DEFAULT_K = 5

_CacheKey = tuple[str | None, int, int]  # (manifest sha256, file mtime in ns, file size)


class _Rows:
    """One parse of a file: its rows, and (built on first search) the vectors' scorer."""

    def __init__(self, key: _CacheKey, rows: list[dict[str, Any]], source: str) -> None:
        self.key = key
        self.rows = rows
        self.source = source
        self._vector_rows: list[int] | None = None
        self._scorer: CosineScorer | None = None

    def vector_rows(self) -> list[int]:
        """Positions of the rows whose ``embedding`` is a usable vector, in file order."""
        if self._vector_rows is None:
            self._vector_rows = [i for i, row in enumerate(self.rows) if is_vector(row.get("embedding"))]
        return self._vector_rows

    def scorer(self) -> CosineScorer | None:
        """The scorer over ``vector_rows`` (None when there are none); ValueError for mixed dimensions."""
        positions = self.vector_rows()
        if self._scorer is None and positions:
            vectors = [self.rows[i]["embedding"] for i in positions]
            dimensions = Counter(map(len, vectors))
            if len(dimensions) > 1:
                found = ", ".join(f"{dim} on {count} rows" for dim, count in sorted(dimensions.items()))
                raise ValueError(
                    f"the vectors in {self.source} have several dimensions ({found}); "
                    "every row must come from one embedding model"
                )
            self._scorer = CosineScorer(matrix_of(vectors, len(vectors[0])), source=self.source)
        return self._scorer


_CACHE: dict[str, _Rows] = {}
_CACHE_LOCK = threading.Lock()


def _cache_key(path: Path) -> _CacheKey:
    stat = path.stat()
    manifest = path.parent / MANIFEST_FILE
    manifest_sha = file_sha256(manifest) if manifest.is_file() else None
    return manifest_sha, stat.st_mtime_ns, stat.st_size


def _parse(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for number, row in read_json_lines(path):
        if isinstance(row, json.JSONDecodeError):
            raise InputError(f"{path}:{number}: not valid JSON ({row.msg})")
        if not isinstance(row, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def load_rows(path: Path) -> _Rows:
    """The parsed rows of ``path``, from the process cache when the file and manifest are unchanged."""
    resolved = path.resolve()
    try:
        key = _cache_key(resolved)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path)) from None
    name = str(resolved)
    with _CACHE_LOCK:
        cached = _CACHE.get(name)
    if cached is not None and cached.key == key:
        return cached
    loaded = _Rows(key, _parse(resolved), source=str(path))
    with _CACHE_LOCK:
        _CACHE[name] = loaded
    return loaded


def _first_vector(vectors: Any) -> np.ndarray | None:
    """The first vector of an embedder's answer (a list of lists or a 2-D array), None if empty."""
    if vectors is None or len(vectors) == 0:
        return None
    first = np.asarray(vectors[0], dtype=np.float64)
    return first if first.ndim == 1 and first.size > 0 else None


class EmbeddingStore:
    """Rows of an ``embeddings.jsonl`` and cosine search over their vectors.

    Raises FileNotFoundError when ``jsonl_path`` does not exist, InputError for a line that is
    not a JSON object.
    """

    def __init__(self, jsonl_path: str | os.PathLike[str]) -> None:
        self.path = Path(jsonl_path)
        self._loaded = load_rows(self.path)

    def rows_with_vectors(self) -> list[dict[str, Any]]:
        """The rows whose ``embedding`` is a non-empty list of finite numbers, in file order."""
        rows = self._loaded.rows
        return [rows[i] for i in self._loaded.vector_rows()]

    def search_by_vector(
        self, qvec: Sequence[float] | np.ndarray, k: int = DEFAULT_K, min_score: float | None = None
    ) -> list[dict[str, Any]]:
        """The ``k`` rows most similar to ``qvec`` by cosine, highest first, ties in file order;
        with ``min_score`` only rows scoring at least that (before the ``k`` are taken). Each
        result is ``{"score": cosine, **row}``.

        Raises ValueError when ``qvec``'s dimension is not the stored vectors'.
        """
        scorer = self._loaded.scorer()
        if scorer is None:
            return []
        scores = scorer.scores(qvec)
        positions = self._loaded.vector_rows()
        rows = self._loaded.rows
        results = []
        for i in top_indices(scores, k, min_score):
            result: dict[str, Any] = {"score": float(scores[i])}
            result.update((key, value) for key, value in rows[positions[i]].items() if key != "score")
            results.append(result)
        return results

    def search_by_text(self, text: str, embedder: Any, k: int = DEFAULT_K) -> list[dict[str, Any]]:
        """``search_by_vector`` with ``embedder.embed([text])[0]`` (or ``embed_queries``); ``[]``
        when the embedder raises or gives no vector. A dimension mismatch still raises."""
        embed = getattr(embedder, "embed", None) or getattr(embedder, "embed_queries", None)
        try:
            query = _first_vector(embed([text]))  # type: ignore[misc]
        except Exception:
            return []
        if query is None:
            return []
        return self.search_by_vector(query, k=k)
