"""The dense index on Milvus behind ``VectorIndex`` (``bm25.py`` is the keyword one).

Both Milvus indices are keyed by chunk id and hold each chunk's filterable fields
(``client.ChunkFields``), so filters run inside Milvus (``filters.py``). They keep the
local indices' conventions: results best first, ties by ascending chunk id (a search widens while
the k-th score is tied), ``[]`` for ``k <= 0``, an empty or all-zero query or an empty
``allowed_ids``, and k hits whenever k allowed chunks exist (``allowed_ids`` is a prefilter inside
Milvus; a filtered ANN search that still returns fewer falls back to an exact scan of the allowed
rows).

One row a window (``id = chunk_id << WINDOW_BITS | window``, as in ``multivector.py``): a chunk
scores as its best window (MaxP) through Milvus's group-by search on ``chunk_id``; with
``dense_scoring: pooled``, one row a chunk. The index is ``milvus.index_type`` (HNSW by default,
approximate; FLAT is exact). ``score`` is exact: inner products computed from the stored vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError, IndexMismatchError
from hybrid_rag.indices.dense import _as_ids, rank_hits
from hybrid_rag.indices.milvus.client import (
    ChunkFields,
    add_filter_fields,
    index_params,
    search_params,
)
from hybrid_rag.indices.milvus.collection import ID_BATCH, MilvusCollection, widen
from hybrid_rag.indices.milvus.filters import ids_expr
from hybrid_rag.indices.multivector import MAX_WINDOWS, WINDOW_BITS, cap_windows, max_per_chunk
from hybrid_rag.indices.vector_rows import ModelVectors, positive_dimension, preview, search_query
from hybrid_rag.settings import MilvusSettings
from hybrid_rag.types import Hit
from hybrid_rag.vectors import pool_windows


class MilvusVectorIndex(MilvusCollection, ModelVectors):
    """Chunk vectors (MaxP windows, or one pooled vector a chunk) in a Milvus collection."""

    kind = "milvus-dense"
    _one_row_a_chunk = "window == 0"

    def __init__(self, client: Any, name: str, settings: MilvusSettings, facts: dict[str, Any]) -> None:
        super().__init__(client, name, settings)
        self._dimension = int(facts["dimension"])
        self._model_name = str(facts["model_name"])
        self.maxp = facts["scoring"] == "maxp"

    @classmethod
    def create(
        cls,
        client: Any,
        name: str,
        settings: MilvusSettings,
        *,
        dimension: int,
        model_name: str,
        scoring: str,
    ) -> MilvusVectorIndex:
        """A new, empty collection ``name`` (one already there is dropped)."""
        from pymilvus import DataType, MilvusClient

        facts = {"dimension": positive_dimension(dimension), "model_name": model_name, "scoring": scoring}
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("chunk_id", DataType.INT64)
        schema.add_field("window", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=int(dimension))
        add_filter_fields(schema)
        index_type, params = index_params(settings)
        indexes = client.prepare_index_params()
        indexes.add_index(field_name="vector", index_type=index_type, metric_type="IP", params=params)
        index = cls(client, name, settings, facts)
        index._create(schema, indexes, {**facts, "index_type": index_type, "index_params": params})
        return index

    @classmethod
    def open(
        cls, client: Any, name: str, settings: MilvusSettings, *, model_name: str, dimension: int
    ) -> Any:
        """The existing collection ``name``, refused if built for another model or dimension."""
        facts = MilvusCollection(client, name, settings).facts()
        if facts.get("kind") != cls.kind:
            raise CorruptIndexError(f"Milvus collection {name} is a {facts.get('kind')}, not a {cls.kind}")
        if facts["model_name"] != model_name or facts["dimension"] != dimension:
            raise IndexMismatchError(
                f"Milvus collection {name} was built with model {facts['model_name']} (dim "
                f"{facts['dimension']}); the config says model {model_name} (dim {dimension}): run "
                "`hybrid-rag rebuild`"
            )
        index = cls(client, name, settings, facts)
        index.ensure_loaded()
        return index

    @classmethod
    def load(cls, directory: Path, client: Any, settings: MilvusSettings, **expected: Any) -> Any:
        return cls.open(client, cls.saved_name(directory), settings, **expected)

    def add(
        self,
        ids: np.ndarray,
        vectors: np.ndarray | Sequence[np.ndarray],
        *,
        fields: Sequence[ChunkFields] | None = None,
        upsert: bool = False,
    ) -> None:
        """Add chunks: ``vectors`` one row each, or one window matrix each; ids must be new unless
        ``upsert``. ``fields`` are their filterable fields (empty ones without)."""
        ids = _as_ids(ids)
        matrices = [np.atleast_2d(np.asarray(v, dtype=np.float32)) for v in vectors]
        if len(ids) != len(matrices):
            raise ValueError(f"{len(ids)} ids for {len(matrices)} vectors")
        if fields is not None and len(fields) != len(ids):
            raise ValueError(f"{len(ids)} ids for {len(fields)} field records")
        if len(ids) == 0:
            return
        for m in matrices:
            if m.ndim != 2 or m.shape[1] != self._dimension or len(m) == 0:
                raise ValueError(f"vectors must have shape (n, {self._dimension}), got {m.shape}")
            if not np.isfinite(m).all():
                raise ValueError("vectors contain NaN or infinite values")
        unique, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"duplicate ids in one add: {preview(unique[counts > 1])}")
        present = unique[self.contains(unique)]
        if len(present) and not upsert:
            raise ValueError(f"ids already in the index: {preview(present)}; remove them first")
        if len(present):
            self.remove(present)  # an upsert of fewer windows must not leave old ones behind
        rows = []
        for i, (chunk_id, m) in enumerate(zip(ids.tolist(), matrices, strict=True)):
            m = cap_windows(m) if self.maxp else pool_windows(m)[None, :]
            extra = (fields[i] if fields is not None else ChunkFields()).row()
            rows.extend(
                {"id": chunk_id << WINDOW_BITS | w, "chunk_id": chunk_id, "window": w, "vector": v, **extra}
                for w, v in enumerate(m.tolist())
            )
        self._insert(rows)

    def _rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(window ids, vectors) of the stored rows of chunk ``ids``, by window id.

        Looked up by primary key (every window id a chunk can have) rather than ``chunk_id in``:
        a scan of the scalar field costs 13x as much at 80k windows on milvus-lite."""
        window_ids: list[int] = []
        vectors: list[list[float]] = []
        slots = np.arange(MAX_WINDOWS, dtype=np.int64)
        for start in range(0, len(ids), ID_BATCH):
            chunks = np.unique(ids[start : start + ID_BATCH])
            keys = (chunks[:, None] << WINDOW_BITS | slots[None, :]).reshape(-1)
            for row in self._query(ids_expr(keys, field="id"), ["id", "vector"]):
                window_ids.append(row["id"])
                vectors.append(row["vector"])
        order = np.argsort(np.array(window_ids, dtype=np.int64), kind="stable")
        matrix = np.array(vectors, dtype=np.float32).reshape(-1, self._dimension)
        return np.array(window_ids, dtype=np.int64)[order], matrix[order]

    def windows(self, chunk_id: int) -> np.ndarray:
        """One chunk's stored window vectors, in window order."""
        return self._rows(np.array([chunk_id], dtype=np.int64))[1]

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """Each chunk's pooled vector (for MMR and feedback), in the order given; KeyError if absent."""
        ids = _as_ids(ids)
        window_ids, matrix = self._rows(ids)
        owners = window_ids >> WINDOW_BITS
        missing = ids[~np.isin(ids, owners)]
        if len(missing):
            raise KeyError(f"ids not in the vector index: {preview(missing)}")
        pooled = {c: pool_windows(matrix[owners == c]) for c in np.unique(owners).tolist()}
        return np.array([pooled[c] for c in ids.tolist()], dtype=np.float32).reshape(-1, self._dimension)

    def score(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Each chunk's best window inner product with ``query`` from its stored vectors (as search
        ranks it), in the order given; NaN for an id this index does not hold."""
        ids = _as_ids(ids)
        out = np.full(len(ids), np.nan)
        window_ids, matrix = self._rows(ids)
        if len(window_ids):
            chunk_ids, best = max_per_chunk(
                window_ids, matrix @ np.asarray(query, dtype=np.float32).reshape(-1)
            )
            lookup = dict(zip(chunk_ids.tolist(), best.tolist(), strict=True))
            out = np.array([lookup.get(c, np.nan) for c in ids.tolist()], dtype=np.float64)
        return out

    def search(self, query: np.ndarray, k: int, allowed_ids: np.ndarray | None = None) -> list[Hit]:
        """Top-k chunks by (best window) inner product; ``allowed_ids`` is a prefilter inside Milvus."""
        q = search_query(query, k, self._dimension)
        if q is None or (allowed_ids is not None and len(allowed_ids) == 0):
            return []
        query = q
        where = "" if allowed_ids is None else self._where(allowed_ids)
        ids, scores = widen(lambda limit: self._ann(query, limit, where), k)
        if len(ids) < k and self.count(where) > len(ids):
            ids, scores = self._exact(query, where)  # a filter ANN could not satisfy
        return rank_hits(ids, scores, k)

    def _ann(self, query: np.ndarray, limit: int, where: str) -> tuple[np.ndarray, np.ndarray]:
        group = {"group_by_field": "chunk_id"} if self.maxp else {}
        hits = self._search(
            [query.tolist()],
            "vector",
            limit,
            where,
            output_fields=["chunk_id"],
            search_params=search_params(self.settings, limit),
            **group,
        )
        ids = np.array([h["entity"]["chunk_id"] for h in hits], dtype=np.int64)
        return ids, np.array([h["distance"] for h in hits], dtype=np.float64)

    def _exact(self, query: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
        """Every row matching ``where`` scored with numpy: (chunk ids, best window scores)."""
        window_ids: list[int] = []
        scores: list[np.ndarray] = []
        for batch in self._scan(where, ["id", "vector"]):
            window_ids.extend(row["id"] for row in batch)
            scores.append(np.array([row["vector"] for row in batch], dtype=np.float32) @ query)
        if not window_ids:
            return np.empty(0, dtype=np.int64), np.empty(0)
        return max_per_chunk(np.array(window_ids, dtype=np.int64), np.concatenate(scores).astype(np.float64))
