"""The index sections of the settings: ``index`` (Faiss, Chroma, Milvus; exact or ANN), ``milvus``
and ``bm25``; re-exported by ``settings.py``, where ``Settings`` gathers every section."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator

from hybrid_rag.settings_base import Float, Int, _Section, http_url


class IndexSettings(_Section):
    dense_backend: Literal["faiss", "chroma", "milvus"] = "faiss"
    # maxp: every window of a long chunk is a vector and a chunk scores as its best window;
    # pooled: one vector per chunk, the mean of its windows
    dense_scoring: Literal["maxp", "pooled"] = "maxp"
    # faiss: flat (exact), hnsw or ivf (approximate, indices/ann.py); auto: flat below ann_min_chunks
    dense_kind: Literal["auto", "flat", "hnsw", "ivf"] = "auto"
    ann_min_chunks: Int = Field(250_000, ge=0)  # auto: exact below (RESULTS.md#scale-on-one-machine)
    hnsw_m: Int = Field(32, ge=4, le=256)  # graph neighbours a vector (build time)
    hnsw_ef_construction: Int = Field(80, gt=0)  # build breadth
    hnsw_ef_search: Int = Field(128, gt=0)  # search breadth; at least the k asked for
    ivf_nlist: Int = Field(0, ge=0)  # inverted lists (build time); 0: 4·sqrt(vectors)
    ivf_nprobe: Int = Field(32, gt=0)  # lists searched a query
    ann_exact_filter_max: Int = Field(20_000, ge=0)  # a filter leaving at most this many vectors: exact
    # the hubness table a build writes for features.hubness (indices/hubness.py): each chunk's
    # hubness_k nearest chunks; none past hubness_max_chunks (the search is quadratic; 0: never)
    hubness_k: Int = Field(10, ge=1, le=100)
    hubness_max_chunks: Int = Field(50_000, ge=0)
    # the question bank a build writes for features.question_hubness (indices/question_bank.py): at
    # most this many pseudo-questions (docs' and prose's first sentences) embedded as queries; 0: none
    question_bank_size: Int = Field(0, ge=0, le=50_000)


class MilvusSettings(_Section):
    """Where the Milvus backend (``index.dense_backend: milvus`` with ``bm25.backend: milvus``) keeps
    its collections, and how they are indexed (``indices/milvus/``, ``docs/scale-out.md``)."""

    # a local path ending in .db (relative to paths.data_dir) runs milvus-lite in-process;
    # http(s)://host:19530 is a Milvus standalone server or cluster
    uri: str = "milvus.db"
    token: SecretStr | None = None  # "user:password" or an API key; better set by HYBRID_RAG_MILVUS__TOKEN
    db_name: str = ""  # "": the server's default database
    collection_prefix: str = Field("hybrid_rag", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,180}$")
    index_type: Literal["HNSW", "IVF_FLAT", "IVF_PQ", "DISKANN", "FLAT"] = "HNSW"
    hnsw_m: Int = Field(32, ge=2, le=2048)
    hnsw_ef_construction: Int = Field(200, gt=0)
    hnsw_ef: Int = Field(256, gt=0)  # search breadth; at least the k asked for is used
    ivf_nlist: Int = Field(1024, gt=0)
    ivf_nprobe: Int = Field(64, gt=0)
    ivf_pq_m: Int = Field(48, gt=0)  # IVF_PQ: sub-vectors (must divide the dimension), 8 bits each
    diskann_search_list: Int = Field(200, gt=0)
    shards: Int = Field(1, ge=1, le=16)  # a collection's write channels (a server: set when it is created)
    replicas: Int = Field(1, ge=1)  # in-memory copies served by different query nodes (read QPS, failover)
    mmap: bool = False  # query nodes map raw data from local disk instead of holding it in memory
    # Session: this client reads its own writes, other clients within the server's staleness bound
    consistency_level: Literal["Strong", "Session", "Bounded", "Eventually"] = "Session"
    timeout_seconds: Float = Field(30.0, gt=0)
    insert_batch: Int = Field(1000, gt=0)  # rows a request
    # true: every ingest writes a new collection pair, so each version stays a snapshot a rollback
    # serves as it was; false: an ingest updates the newest version in place (cheaper, no going back)
    snapshot_versions: bool = True

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str) -> str:
        if value.startswith(("http://", "https://")):
            return http_url(value, "http://localhost:19530") or value
        if not value.endswith(".db"):
            raise ValueError(
                f"{value!r} is neither an http(s) URL nor a milvus-lite file (a path ending in .db)"
            )
        return value


class BM25Settings(_Section):
    backend: Literal["bm25s", "rank_bm25", "milvus"] = "bm25s"
    variant: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
    k1: Float = Field(1.5, gt=0)
    b: Float = Field(0.75, ge=0, le=1)
    bm25_min_df: Int = Field(1, ge=1)
    tokenizer: Literal["spacy", "regex"] = "spacy"
    stopwords: Literal["spacy", "lucene", "none"] = "spacy"  # spacy: 326 words; lucene: 33 function words
    stemmer: Literal["none", "english"] = "none"
    split_identifiers: bool = True  # getFileName / get_file_name also index as get, file, name
    languages: bool = True  # each chunk and query analysed in its own language (hybrid_rag/lang/analyzers.py)
    max_deltas: Int = Field(8, ge=1)  # bm25s segments: more delta segments than this are merged into one
    merge_fraction: Float = Field(0.25, gt=0, le=1)  # deltas or tombstones at this share of base: new base
