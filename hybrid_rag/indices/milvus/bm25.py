"""The keyword index on Milvus: BM25 over chunk terms behind ``KeywordIndex`` (``dense.py`` has
the dense one and the conventions both keep).

One row a chunk; a BM25 function over an analyzed text field writes a sparse vector that Milvus
scores (Lucene's BM25 with ``bm25.k1`` and ``bm25.b``). The text is the chunk's terms from our own
tokenizer (``client.encode_terms``), so Milvus counts exactly the terms the local index does
and ranks as bm25s's ``lucene`` variant (its scores are (k1 + 1) times larger). ``score`` is a
search filtered to the asked ids. On milvus-lite every write is flushed: it scores rows not yet
flushed with the statistics of the rows a filter lets through, and flushed ones per segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.bm25 import _check_params
from hybrid_rag.indices.dense import _as_ids, rank_hits
from hybrid_rag.indices.milvus.client import ChunkFields, add_filter_fields, encode_terms
from hybrid_rag.indices.milvus.collection import TOPK_MAX, MilvusCollection, widen
from hybrid_rag.indices.milvus.filters import ids_expr
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.settings import BM25Settings, MilvusSettings
from hybrid_rag.types import Hit


class MilvusKeywordIndex(MilvusCollection):
    """BM25 over chunk terms in a Milvus collection (a BM25 function on an analyzed text field)."""

    kind = "milvus-bm25"

    def __init__(self, client: Any, name: str, settings: MilvusSettings, bm25: BM25Settings) -> None:
        super().__init__(client, name, settings)
        self._bm25 = bm25
        self._tokenizer = Tokenizer.for_settings(bm25)
        self._lite = not settings.uri.startswith(("http://", "https://"))

    @classmethod
    def create(
        cls, client: Any, name: str, settings: MilvusSettings, bm25: BM25Settings
    ) -> MilvusKeywordIndex:
        """A new, empty collection ``name`` (one already there is dropped)."""
        from pymilvus import DataType, Function, FunctionType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", DataType.INT64, is_primary=True)
        schema.add_field(
            "terms",
            DataType.VARCHAR,
            max_length=65_535,
            enable_analyzer=True,
            analyzer_params={"tokenizer": "standard"},
        )
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="bm25",
                function_type=FunctionType.BM25,
                input_field_names=["terms"],
                output_field_names=["sparse"],
            )
        )
        add_filter_fields(schema)
        indexes = client.prepare_index_params()
        indexes.add_index(
            field_name="sparse",
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params={"bm25_k1": bm25.k1, "bm25_b": bm25.b},
        )
        index = cls(client, name, settings, bm25)
        index._create(schema, indexes, index._facts())
        return index

    def _facts(self) -> dict[str, Any]:
        return {"params": self._bm25.model_dump(mode="json"), "tokenizer": self._tokenizer.params()}

    @classmethod
    def open(cls, client: Any, name: str, settings: MilvusSettings, bm25: BM25Settings) -> MilvusKeywordIndex:
        """The existing collection ``name``, refused if built with other BM25 or tokenizer settings."""
        facts = MilvusCollection(client, name, settings).facts()
        if facts.get("kind") != cls.kind:
            raise CorruptIndexError(f"Milvus collection {name} is a {facts.get('kind')}, not a {cls.kind}")
        _check_params(Path(f"milvus:{name}"), facts, bm25)
        index = cls(client, name, settings, bm25)
        index.ensure_loaded()
        return index

    @classmethod
    def load(cls, directory: Path, client: Any, settings: MilvusSettings, bm25: BM25Settings) -> Any:
        return cls.open(client, cls.saved_name(directory), settings, bm25)

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    @property
    def settings_bm25(self) -> BM25Settings:
        return self._bm25

    def _written(self) -> None:
        if self._lite:
            self.flush()  # milvus-lite scores unflushed rows with statistics of the filtered rows only

    def build(
        self,
        ids: np.ndarray,
        texts: Sequence[str],
        *,
        tokens: Sequence[Sequence[str]] | None = None,
        fields: Sequence[ChunkFields] | None = None,
    ) -> None:
        """Index ``texts`` under chunk ``ids``, replacing whatever was indexed before."""
        ids = _as_ids(ids)
        if len(np.unique(ids)) != len(ids):
            raise ValueError("duplicate chunk ids given to BM25 build")
        self._check(ids, texts, tokens, fields)
        type(self).create(self.client, self.name, self.settings, self._bm25)
        self.add(ids, texts, tokens=tokens, fields=fields)

    def add(
        self,
        ids: np.ndarray,
        texts: Sequence[str],
        *,
        tokens: Sequence[Sequence[str]] | None = None,
        fields: Sequence[ChunkFields] | None = None,
        flush: bool = True,
    ) -> None:
        """Upsert chunks (an id already held is replaced). A build adding many batches passes
        ``flush=False`` and flushes once: milvus-lite keeps BM25 statistics per flushed segment."""
        ids = _as_ids(ids)
        self._check(ids, texts, tokens, fields)
        if len(ids) == 0:
            return
        terms = [list(t) for t in tokens] if tokens is not None else self._tokenizer.tokenize_many(texts)
        rows = [
            {"chunk_id": c, "terms": encode_terms(t), **(fields[i] if fields else ChunkFields()).row()}
            for i, (c, t) in enumerate(zip(ids.tolist(), terms, strict=True))
        ]
        self._insert(rows, upsert=True, written=flush)

    @staticmethod
    def _check(ids: np.ndarray, texts: Sequence[str], tokens: Any, fields: Any) -> None:
        if len(ids) != len(texts) or any(x is not None and len(x) != len(texts) for x in (tokens, fields)):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")

    def _query_text(self, query: str, lang: str | None, terms: Sequence[str] | None = None) -> str:
        if not query.strip():
            return ""
        return encode_terms(list(terms) if terms is not None else self._tokenizer.tokenize_query(query, lang))

    def search(
        self,
        query: str,
        k: int,
        allowed_ids: np.ndarray | None = None,
        *,
        lang: str | None = None,
        terms: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Top-k chunk ids for ``query`` (read in ``lang``; None: detected; or its ``terms``, read by
        this index's tokenizer) by BM25; only chunks holding a query term."""
        text = self._query_text(query, lang, terms)
        if k <= 0 or not text or (allowed_ids is not None and len(allowed_ids) == 0):
            return []
        where = "" if allowed_ids is None else self._where(allowed_ids)
        ids, scores = widen(lambda limit: self._bm25_search(text, limit, where), k)
        return rank_hits(ids, scores, k)

    def _bm25_search(self, text: str, limit: int, where: str) -> tuple[np.ndarray, np.ndarray]:
        hits = self._search([text], "sparse", limit, where, search_params={"metric_type": "BM25"})
        # Milvus answers the BM25 score; milvus-lite its negation (a distance): both are |score|
        scores = np.abs(np.array([h["distance"] for h in hits], dtype=np.float64))
        ids = np.array([h["chunk_id"] for h in hits], dtype=np.int64)
        return ids[scores > 0], scores[scores > 0]

    def score(
        self, query: str, ids: np.ndarray, *, lang: str | None = None, terms: Sequence[str] | None = None
    ) -> np.ndarray:
        """The BM25 score of each of ``ids`` (0 without a query term), in the order given; NaN for an
        id this index does not hold: a search filtered to the ids."""
        ids = _as_ids(ids)
        present = self.contains(ids)
        out = np.where(present, 0.0, np.nan)
        text = self._query_text(query, lang, terms)
        held = np.unique(ids[present])
        for start in range(0, len(held) if text else 0, TOPK_MAX):
            part = held[start : start + TOPK_MAX]
            found, scores = self._bm25_search(text, len(part), ids_expr(part))
            lookup = dict(zip(found.tolist(), scores.tolist(), strict=True))
            out = np.array([lookup.get(c, v) for c, v in zip(ids.tolist(), out.tolist(), strict=True)])
        return out
