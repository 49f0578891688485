"""The store's tables (SQLAlchemy 2.0 declarative). Only ``store/`` imports this module."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 9  # 2: documents.meta and chunks.meta (JSON); 3: documents.retired (snapshots);
# 4: embeddings.checksum (CRC-32 of the vector); 5: chunks.duplicate_of (dropped near-duplicates kept,
# unindexed) and documents.created (the state that wrote a row); 6: chunks.lang (natural
# language); 7: the symbols table; 8: index_versions.host (each data dir's own version history in a
# shared store); 9: the code_references table; older stores migrate
GENERATION = "generation"  # the meta key of the store state: +1 on every write of documents
SYMBOLS_PENDING = "symbols_pending"  # meta key: a store migrated from schema 4 whose code files have no
# symbols yet; the next ingest rewrites them (``ingest/pipeline.py``) and removes the key
REFERENCES_PENDING = "references_pending"  # meta key: the same for a store migrated from before the
# reference index (schema 7): its code files have no references until the next ingest rewrites them
CODE_PARSE = "code_parse"  # meta key: the version of what the parse of a code file records; a store
# whose value is not CODE_PARSE_VERSION (none: 1) has its code files parsed again by the next ingest
CODE_PARSE_VERSION = 5  # 2: declarations' written types (``binding`` references); 3: member rows
# (re-exports, fields, variants, constants: ``symbols/members.py``); 4: C/C++/Java calls' argument
# lists, C/C++ ``#if`` branches (``alternative`` references), C++ ``using X = Y`` definitions; 5: C++
# definitions of nested names (``A::B::f``)


class _Base(DeclarativeBase):
    pass


class _Meta(_Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String, primary_key=True)
    value: Mapped[str] = mapped_column(String)


LIVE = "retired IS NULL"  # the rows of the store's current state


class _Document(_Base):
    """One revision of a file. A newer ingest of the path (or its delete) does not touch the row: it
    sets ``retired`` to the store state (generation) that superseded it, so an index version built
    from an older state still reads the text, lines and metadata it indexed. Garbage collection
    deletes the rows retired before the oldest kept version's state (``store/snapshots.py``)."""

    __tablename__ = "documents"
    __table_args__ = (
        Index(
            "ix_documents_live_path",
            "path",
            unique=True,
            sqlite_where=text(LIVE),
            postgresql_where=text(LIVE),
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(String, index=True)
    collection: Mapped[str] = mapped_column(String, index=True)
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    mtime: Mapped[float] = mapped_column(Float)
    source_type: Mapped[str] = mapped_column(String(8))
    language: Mapped[str] = mapped_column(String)
    ingested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    meta: Mapped[str | None] = mapped_column(Text, nullable=True)  # a JSON object, or NULL
    retired: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    created: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the state that wrote it; NULL
    # in rows written before schema 5 (taken as state 0)


class _Chunk(_Base):
    __tablename__ = "chunks"
    __table_args__: ClassVar[dict[str, Any]] = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    start_line: Mapped[int] = mapped_column(Integer)
    end_line: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    token_count: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    meta: Mapped[str | None] = mapped_column(Text, nullable=True)  # a JSON object, or NULL
    # the sha256 of the chunk this one nearly repeats (in its collection and metadata): such a chunk
    # is stored but not indexed, and comes back when no live chunk of that sha256 is left (dedupe)
    duplicate_of: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lang: Mapped[str] = mapped_column(String(16), default="und", index=True)  # ISO 639-1, or "und"


class _Symbol(_Base):
    """One definition of a code document (``hybrid_rag/symbols``): written with its document's row,
    in the same transaction, so a document's revision and its symbols change together; a retired
    revision keeps its symbols for the index versions that read it, and garbage collection drops
    them with it (cascade). ``created``: the store state that wrote the row, so a version built
    from an older state does not see it (``store/symbol_rows.py``)."""

    __tablename__ = "symbols"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    chunk_id: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the chunk holding its start
    created: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)  # order in the file (the outline's)
    name: Mapped[str] = mapped_column(String, index=True)
    name_lower: Mapped[str] = mapped_column(String, index=True)  # case-insensitive lookups
    kind: Mapped[str] = mapped_column(String(32))
    qualified_name: Mapped[str] = mapped_column(String)
    signature: Mapped[str] = mapped_column(Text)
    start_line: Mapped[int] = mapped_column(Integer)
    end_line: Mapped[int] = mapped_column(Integer)
    doc: Mapped[str] = mapped_column(Text)  # the doc comment's first sentence, or ""
    parent: Mapped[str | None] = mapped_column(String, nullable=True)  # the enclosing qualified name


class _Reference(_Base):
    """One use of a name in a code document (``hybrid_rag/symbols/references.py``): a call, a type
    or base class named, an import. Written with its document's row like a symbol, and read at the
    same store states (``store/reference_rows.py``); resolved to definitions when it is asked for,
    so a changed callee's file never leaves a stale edge behind. ``scope``: the ``position`` of the
    innermost definition holding it among its document's symbols (NULL at the top level)."""

    __tablename__ = "code_references"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    created: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String, index=True)
    kind: Mapped[str] = mapped_column(String(16))  # call, class, type, implementation, interface, import
    line: Mapped[int] = mapped_column(Integer)
    qualifier: Mapped[str] = mapped_column(String)  # self of self.take(), Foo of Foo::new(); "" none
    module: Mapped[str] = mapped_column(String)  # an import's module (a.b, ./pool, crate::db); "" else
    scope: Mapped[int | None] = mapped_column(Integer, nullable=True)


class _Embedding(_Base):
    """Cache keyed by (model, chunk sha256): text embedded once is never embedded again."""

    __tablename__ = "embeddings"
    model: Mapped[str] = mapped_column(String, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    dimension: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    checksum: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # CRC-32 of vector; NULL
    # in rows written before schema 4 (those are checked by their norms only)


class _Signature(_Base):
    """MinHash signatures of chunk texts (near-duplicate detection), keyed by chunk sha256."""

    __tablename__ = "signatures"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    num_perm: Mapped[int] = mapped_column(Integer)
    hashvalues: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # None: no words


class _Tokens(_Base):
    """BM25 terms of chunk texts, keyed by chunk sha256 and the tokenizer's parameters."""

    __tablename__ = "bm25_tokens"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    tokenizer: Mapped[str] = mapped_column(String(64), primary_key=True)
    terms: Mapped[str] = mapped_column(Text)  # space-separated (terms never hold white space)


class _IndexVersion(_Base):
    __tablename__ = "index_versions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    version: Mapped[int] = mapped_column(Integer, index=True)
    built_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    source_hash: Mapped[str] = mapped_column(String(64))
    params: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String)
    # the data dir that built or rolled back (``store/readers.py``); NULL in rows from before schema
    # 8, which every data dir reads
    host: Mapped[str | None] = mapped_column(String, nullable=True, index=True)


DOCUMENTS = _Document.__table__
"""The documents table, for filters that compile to SQL (columns: path, collection, sha256, size,
mtime, source_type, language, ingested_at)."""
SYMBOLS = _Symbol.__table__
REFERENCES = _Reference.__table__
CHUNKS = _Chunk.__table__
"""The chunks table (columns: id, document_id, position, start_line, end_line, token_count, sha256,
lang)."""
