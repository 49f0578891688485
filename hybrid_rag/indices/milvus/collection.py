"""One Milvus collection keyed by chunk id: what the dense and the keyword index do alike (count,
list and look up ids, remove, prefilter, write in batches, save a manifest naming the collection).

``save(directory)`` flushes and writes ``milvus.json`` naming the collection; ``load`` reopens it
by name. The data itself lives in Milvus.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.dense import _as_ids
from hybrid_rag.indices.files import write_json_atomic
from hybrid_rag.indices.milvus.client import ITERATOR_LOG, milvus_errors, quiet
from hybrid_rag.indices.milvus.filters import ids_expr, to_milvus
from hybrid_rag.settings import MilvusSettings

MANIFEST_FILE = "milvus.json"
FACTS = "hybrid_rag"  # the collection property holding what the collection was built for (JSON)
TOPK_MAX = 16_384  # Milvus's largest search limit
ID_LIST_MAX = 4096  # allowed ids go as an id list up to this many; past it, as the compiled filter
ID_BATCH = 256  # chunk ids a lookup asks for at once (at most 32 windows each: within TOPK_MAX rows)


class MilvusCollection:
    """One Milvus collection keyed by chunk id: what both indices do alike."""

    kind = ""

    def __init__(self, client: Any, name: str, settings: MilvusSettings) -> None:
        self.client = client
        self.name = name
        self.settings = settings

    def ensure_loaded(self) -> None:
        """Load the collection into memory if it is not (a restarted milvus-lite forgets its loads)."""
        with milvus_errors(f"load collection {self.name}"):
            if "Loaded" not in str(self.client.get_load_state(self.name).get("state")):
                self.client.load_collection(self.name, replica_number=self.settings.replicas)

    def facts(self) -> dict[str, Any]:
        """What the collection was created for (its ``hybrid_rag`` property)."""
        with milvus_errors(f"describe collection {self.name}"):
            if not self.client.has_collection(self.name):
                raise CorruptIndexError(f"Milvus collection {self.name} is gone: run `hybrid-rag rebuild`")
            properties = self.client.describe_collection(self.name).get("properties") or {}
        try:
            return json.loads(properties[FACTS])
        except (KeyError, json.JSONDecodeError):
            raise CorruptIndexError(f"Milvus collection {self.name} was not made by hybrid-rag") from None

    def _create(self, schema: Any, indexes: Any, facts: dict[str, Any]) -> None:
        with milvus_errors(f"create collection {self.name}"):
            if self.client.has_collection(self.name):
                self.client.drop_collection(self.name)
            properties = {FACTS: json.dumps({"kind": self.kind, **facts}, sort_keys=True)}
            if self.settings.mmap:
                properties["mmap.enabled"] = "true"
            self.client.create_collection(
                self.name,
                schema=schema,
                index_params=indexes,
                consistency_level=self.settings.consistency_level,
                num_shards=self.settings.shards,
                properties=properties,
            )
            self.client.release_collection(self.name)  # created loaded with one replica
            self.client.load_collection(self.name, replica_number=self.settings.replicas)

    def _query(self, where: str, fields: list[str], limit: int | None = TOPK_MAX) -> list[dict[str, Any]]:
        with milvus_errors(f"query {self.name}"):
            kwargs = {} if limit is None else {"limit": limit}
            return self.client.query(self.name, filter=where, output_fields=fields, **kwargs)

    def count(self, where: str = "") -> int:
        """Chunks (not windows) matching ``where``."""
        rows = self._query(and_expr(where, self._one_row_a_chunk), ["count(*)"], limit=None)
        return int(rows[0]["count(*)"]) if rows else 0

    _one_row_a_chunk = ""  # the condition that picks one row of each chunk

    def __len__(self) -> int:
        return self.count()

    def ids(self) -> np.ndarray:
        """The chunk ids held, int64, ascending."""
        found = [
            row["chunk_id"] for batch in self._scan(self._one_row_a_chunk, ["chunk_id"]) for row in batch
        ]
        return np.sort(np.array(found, dtype=np.int64))

    def _scan(self, where: str, fields: list[str], batch_size: int = 4096) -> Iterator[list[dict[str, Any]]]:
        """Every row matching ``where``, a batch at a time (a query iterator: no result limit)."""
        # pymilvus warns on every iterator over milvus-lite, which has no MVCC timestamp to give
        with milvus_errors(f"scan {self.name}"), quiet(ITERATOR_LOG):
            iterator = self.client.query_iterator(
                self.name, batch_size=batch_size, filter=where, output_fields=fields
            )
            while batch := iterator.next():
                yield batch
            iterator.close()

    def contains(self, ids: np.ndarray) -> np.ndarray:
        ids = _as_ids(ids)
        held: list[int] = []
        for start in range(0, len(ids), ID_BATCH):
            where = and_expr(ids_expr(np.unique(ids[start : start + ID_BATCH])), self._one_row_a_chunk)
            held.extend(row["chunk_id"] for row in self._query(where, ["chunk_id"]))
        return np.isin(ids, np.array(held, dtype=np.int64))

    def remove(self, ids: np.ndarray) -> int:
        """Remove ``ids`` (unknown ids are ignored); returns how many chunks were removed."""
        present = np.unique(_as_ids(ids))
        present = present[self.contains(present)]
        with milvus_errors(f"delete from {self.name}"):
            for start in range(0, len(present), ID_BATCH):
                self.client.delete(self.name, filter=ids_expr(present[start : start + ID_BATCH]))
        self._written()
        return len(present)

    def _where(self, allowed_ids: np.ndarray) -> str:
        """The prefilter for ``allowed_ids``: the filter they came from when it compiles and the ids
        are many (``protocols.FilteredIds``), else the ids themselves."""
        origin = getattr(allowed_ids, "filter_expr", None)
        ids = np.unique(_as_ids(allowed_ids))
        if origin is not None and len(ids) > ID_LIST_MAX:
            compiled = to_milvus(origin)
            if compiled is not None:
                return compiled
        return ids_expr(ids)

    def _insert(self, rows: list[dict[str, Any]], *, upsert: bool = False, written: bool = True) -> None:
        with milvus_errors(f"write to {self.name}"):
            for start in range(0, len(rows), self.settings.insert_batch):
                part = rows[start : start + self.settings.insert_batch]
                if upsert:
                    self.client.upsert(self.name, part)
                else:
                    self.client.insert(self.name, part)
        if written:
            self._written()

    def _written(self) -> None:
        """After a write (a hook: the keyword index flushes on milvus-lite)."""

    def flush(self) -> None:
        with milvus_errors(f"flush {self.name}"):
            self.client.flush(self.name)

    def _search(self, data: list[Any], field: str, limit: int, where: str, **kwargs: Any) -> list[Any]:
        with milvus_errors(f"search {self.name}"):
            return self.client.search(
                self.name, data=data, anns_field=field, limit=limit, filter=where, **kwargs
            )[0]

    def save(self, directory: Path) -> None:
        """Flush, then write ``milvus.json`` naming the collection (the rows stay in Milvus)."""
        self.flush()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        manifest = {"kind": self.kind, "collection": self.name, "count": len(self), **self.facts()}
        write_json_atomic(directory / MANIFEST_FILE, manifest)

    @staticmethod
    def saved_name(directory: Path) -> str:
        path = Path(directory) / MANIFEST_FILE
        try:
            return str(json.loads(path.read_text(encoding="utf-8"))["collection"])
        except (OSError, KeyError, TypeError, json.JSONDecodeError):
            raise CorruptIndexError(f"Milvus index manifest {path} is missing or corrupt") from None


def and_expr(*conditions: str) -> str:
    parts = [c for c in conditions if c]
    return " and ".join(f"({c})" for c in parts) if len(parts) > 1 else "".join(parts)


def widen(search: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Ask ``search(limit)`` for k+1, doubling while the k-th and the last score tie: (ids, scores)."""
    fetch = min(k + 1, TOPK_MAX)
    while True:
        ids, scores = search(fetch)
        ranked = np.sort(scores)[::-1]
        if len(ids) < fetch or fetch >= TOPK_MAX or ranked[-1] < ranked[k - 1]:
            return ids, scores
        fetch = min(fetch * 2, TOPK_MAX)
