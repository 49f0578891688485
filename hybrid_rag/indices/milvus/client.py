"""Connecting to Milvus, and what both Milvus indices share: the filterable fields and the errors.

``milvus.uri`` is a local path ending in ``.db`` (milvus-lite, in this process, relative to the
data dir) or ``http(s)://host:19530`` (a Milvus standalone server or cluster); the same ``pymilvus``
client API serves both. ``pymilvus`` is imported on first connection only (the ``[milvus]``
extra): an engine that never uses Milvus never imports it.

Every failure of a Milvus call becomes one line in the project's error types: an unreachable
server or an unopenable milvus-lite file a ``RemoteServiceError`` naming the URI, a missing
collection a ``CorruptIndexError`` naming it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hybrid_rag.errors import ConfigError, InputError, RemoteServiceError
from hybrid_rag.indices.milvus.filters import milvus_meta, unix_micros
from hybrid_rag.settings import MilvusSettings

if TYPE_CHECKING:
    from hybrid_rag.store.store import DocumentRecord, MetadataStore
    from hybrid_rag.types import Chunk

MAX_TEXT_BYTES = 65_535  # Milvus's longest VARCHAR
MAX_JSON_BYTES = 65_536  # Milvus's largest JSON value
ITERATOR_LOG = "pymilvus.client.iterator.query_iterator"
_RPC_LOG = "pymilvus.decorators"  # logs a traceback of every failed call before pymilvus raises
# milvus-lite's in-process gRPC server logs a traceback for each call it does not implement (pymilvus
# asks for a timestamp when it creates a collection or an iterator, and carries on without one)
_LITE_SERVER_LOG = "grpc._server"
_PLAIN_TERM = re.compile(r"[a-z0-9][a-z0-9_]*")
_clients: dict[tuple[str, str, str], Any] = {}
_clients_lock = threading.Lock()


@dataclass(frozen=True)
class ChunkFields:
    """The filterable fields of one chunk, as both collections store them (``filters.py``)."""

    path: str = ""
    collection: str = ""
    source_type: str = ""
    language: str = ""
    lang: str = "und"  # the chunk's natural language
    size: int = 0
    mtime: float = 0.0
    ingested_at: int = 0  # microseconds since the epoch, UTC
    start_line: int = 0
    end_line: int = 0
    token_count: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict)  # ``filters.milvus_meta``

    @classmethod
    def of(cls, chunk: Chunk, document: DocumentRecord) -> ChunkFields:
        meta = milvus_meta(document.meta, chunk.meta)
        if len(json.dumps(meta, ensure_ascii=False, default=str).encode()) > MAX_JSON_BYTES:
            raise InputError(
                f"the metadata of {chunk.path} is over the {MAX_JSON_BYTES} bytes a Milvus JSON field holds"
            )
        return cls(
            path=chunk.path,
            collection=chunk.collection,
            source_type=chunk.source_type.value,
            language=chunk.language,
            lang=chunk.lang,
            size=int(document.size),
            mtime=float(document.mtime),
            ingested_at=unix_micros(document.ingested_at),
            start_line=int(chunk.start_line),
            end_line=int(chunk.end_line),
            token_count=int(chunk.token_count),
            meta=meta,
        )

    def row(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def chunk_fields(
    store: MetadataStore, chunks: Sequence[Chunk], documents: Mapping[int, DocumentRecord] | None = None
) -> list[ChunkFields]:
    """The filterable fields of ``chunks``; their documents from ``documents`` (by id) when given,
    else read from the store (a build reads them once and passes them to every batch)."""
    if documents is None:
        documents = {d.id: d for d in store.documents()}
    return [ChunkFields.of(c, documents[c.document_id]) for c in chunks]


_STRING_LENGTHS = {
    "path": MAX_TEXT_BYTES,
    "collection": 4096,
    "source_type": 16,
    "language": 256,
    "lang": 16,
}
_NUMBER_TYPES = {"size": "INT64", "mtime": "DOUBLE", "ingested_at": "INT64"}
_NUMBER_TYPES.update(dict.fromkeys(("start_line", "end_line", "token_count"), "INT64"))


def add_filter_fields(schema: Any) -> None:
    """Add the ``ChunkFields`` columns (and the ``chunk_id`` every filter may name) to a schema."""
    from pymilvus import DataType

    for name, length in _STRING_LENGTHS.items():
        schema.add_field(name, DataType.VARCHAR, max_length=length)
    for name, type_name in _NUMBER_TYPES.items():
        schema.add_field(name, getattr(DataType, type_name))
    schema.add_field("meta", DataType.JSON)


def resolve_uri(settings: MilvusSettings, data_dir: Path) -> str:
    """An http(s) URI as it is; a milvus-lite file relative to the data dir made absolute."""
    if settings.uri.startswith(("http://", "https://")):
        return settings.uri
    path = Path(settings.uri)
    return str(path if path.is_absolute() else Path(data_dir).resolve() / path)


def connect(settings: MilvusSettings, data_dir: Path) -> Any:
    """A ``MilvusClient`` for the settings, one a (uri, token, database) in this process."""
    uri = resolve_uri(settings, data_dir)
    token = settings.token.get_secret_value() if settings.token is not None else ""
    key = (uri, token, settings.db_name)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _open(uri, token, settings)
        return client


def _open(uri: str, token: str, settings: MilvusSettings) -> Any:
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise ConfigError(
            "index.dense_backend / bm25.backend milvus needs pymilvus: pip install 'hybrid-rag[milvus]'"
        ) from None
    local = not uri.startswith(("http://", "https://"))
    if local:
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
    try:
        # each logs a traceback of its own before pymilvus raises
        with quiet("milvus_lite.server_manager"), quiet(_RPC_LOG), quiet(_LITE_SERVER_LOG):
            return MilvusClient(
                uri=uri, token=token, db_name=settings.db_name, timeout=settings.timeout_seconds
            )
    except Exception as exc:  # pymilvus raises MilvusException and its subclasses, grpc errors besides
        if local:
            raise RemoteServiceError(
                f"cannot open the milvus-lite file {uri} (milvus.uri): {_message(exc)}; milvus-lite "
                "serves one process a file, so another process may hold it (run a Milvus server for several)"
            ) from None
        raise RemoteServiceError(f"cannot reach Milvus at {uri} (milvus.uri): {_message(exc)}") from None


def forget_clients() -> None:
    """Close every cached client and stop this process's milvus-lite servers, releasing their files
    to other processes (tests, and a process that is done with Milvus)."""
    with _clients_lock:
        for (uri, _, _), client in _clients.items():
            client.close()
            if not uri.startswith(("http://", "https://")):
                from milvus_lite.server_manager import server_manager_instance

                server_manager_instance.release_server(uri)
        _clients.clear()


@contextmanager
def milvus_errors(what: str) -> Iterator[None]:
    """Turn a failing Milvus call into a ``RemoteServiceError`` saying what was being done."""
    try:
        with quiet(_RPC_LOG), quiet(_LITE_SERVER_LOG):
            yield
    except (RemoteServiceError, ConfigError, ValueError, KeyError):
        raise
    except Exception as exc:
        if type(exc).__module__.startswith(("pymilvus", "grpc")):
            raise RemoteServiceError(f"Milvus failed to {what}: {_message(exc)}") from None
        raise


def _message(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(message).strip().splitlines()[0][:300]


@contextmanager
def quiet(logger_name: str) -> Iterator[None]:
    """Silence one logger for the block (the messages it would print are errors we report ourselves)."""
    logger = logging.getLogger(logger_name)
    disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = disabled


def encode_terms(terms: list[str]) -> str:
    """BM25 terms as text that Milvus's ``standard`` analyzer splits back into exactly these terms.

    The analyzer splits at non-word characters and lowercases; our terms are lowercase already but
    may hold other characters (``e.g.``, ``c++``). A term of ``[a-z0-9]`` starting with one, and
    ``_`` after it, is written as it is; any other term as ``_`` and the hex of its UTF-8 bytes, which
    no plain term starts with: the mapping is one-to-one, so Milvus counts the same terms, document
    lengths and document frequencies as the local index does. Text past Milvus's longest VARCHAR
    keeps its first terms.
    """
    out: list[str] = []
    size = 0
    for term in terms:
        word = term if _PLAIN_TERM.fullmatch(term) else "_" + term.encode("utf-8").hex()
        size += len(word) + 1
        if size > MAX_TEXT_BYTES:
            break
        out.append(word)
    return " ".join(out)


def index_params(settings: MilvusSettings) -> tuple[str, dict[str, Any]]:
    """(index type, build parameters) of the dense vector field."""
    params: Mapping[str, dict[str, Any]] = {
        "HNSW": {"M": settings.hnsw_m, "efConstruction": settings.hnsw_ef_construction},
        "IVF_FLAT": {"nlist": settings.ivf_nlist},
        "IVF_PQ": {"nlist": settings.ivf_nlist, "m": settings.ivf_pq_m, "nbits": 8},
        "DISKANN": {},
        "FLAT": {},
    }
    return settings.index_type, dict(params[settings.index_type])


def search_params(settings: MilvusSettings, limit: int) -> dict[str, Any]:
    """Search parameters of the dense index for ``limit`` results (HNSW's ef is at least the limit)."""
    params: Mapping[str, dict[str, Any]] = {
        "HNSW": {"ef": max(settings.hnsw_ef, limit)},
        "IVF_FLAT": {"nprobe": settings.ivf_nprobe},
        "IVF_PQ": {"nprobe": settings.ivf_nprobe},
        "DISKANN": {"search_list": max(settings.diskann_search_list, limit)},
        "FLAT": {},
    }
    return {"metric_type": "IP", "params": dict(params[settings.index_type])}
