"""``hybrid-rag import FILE``: bring an existing index in, its vectors and metadata kept.

Two formats, told apart by content:

* ``embeddings.json`` (the ``DocumentRetriever`` format): one JSON object whose ``chunks`` is a
  list of ``{chunk_id, text, source_file, position, embedding}``;
* ``embeddings.jsonl`` (the ``EmbeddingStore`` format): one JSON object a line with ``embedding``,
  its text and any other fields (``collection``, ``entity``, ``doc_id``, ``tags``...).

Each row is one chunk, never re-cut. Its document is its source (``source_file``, ``source``,
``path``, ``file``, ``doc_id`` or ``entity``, else the imported file); rows of one source keep
their ``position`` order and their line range where the row gives one (``start_line`` /
``end_line``), else consecutive ranges of their own lines. Every other field is kept as the
chunk's metadata (``meta.<key>`` in filters), with ``imported_from`` naming the file.

Vectors: when the file's dimension is the configured model's, every vector goes into the
embedding cache (normalised: inner product stays cosine) and nothing is embedded; otherwise the
texts are embedded again, and the report says which happened and how many. A row without text, or
with an embedding that is not a non-empty list of numbers of the file's dimension, is skipped with
its line (``chunks[i]`` for the JSON format). A re-import rewrites only sources whose rows changed,
and deletes sources this file no longer has.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import InputError
from hybrid_rag.indices.build import IndexBuilder
from hybrid_rag.ingest.loaders import classify
from hybrid_rag.jsonlines import json_lines
from hybrid_rag.protocols import Embedder
from hybrid_rag.store import FileChunks, MetadataStore
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import ChunkSpan, LoadedFile, fields_of

TEXT_FIELDS = ("text", "content", "chunk_text")
SOURCE_FIELDS = ("source_file", "source", "path", "file", "doc_id", "entity")
POSITION_FIELDS = ("position", "chunk_index", "index")
IMPORTED_FROM = "imported_from"


@dataclass(frozen=True)
class Row:
    """One importable row: where it was in the file, its text, vector and other fields."""

    where: str  # "line 7" or "chunks[6]"
    text: str
    vector: np.ndarray | None
    source: str
    position: int
    start_line: int | None
    end_line: int | None
    meta: Mapping[str, Any]


@dataclass(frozen=True)
class ParsedFile:
    format: str  # "embeddings.json" | "embeddings.jsonl"
    rows: tuple[Row, ...]
    skipped: tuple[tuple[str, str], ...]  # (where, why)
    dimension: int | None  # the file's vector dimension (the most common one), None without vectors


@dataclass(frozen=True)
class ImportReport:
    file: str
    format: str
    rows: int
    reused_vectors: int
    embedded: int
    dimension: int | None
    model_dimension: int
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    version: int | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def vectors_reused(self) -> bool:
        return self.dimension == self.model_dimension and self.reused_vectors > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_of(
                self, "file", "format", "rows", "reused_vectors", "embedded", "dimension", "model_dimension"
            ),
            "documents": {
                "added": list(self.added),
                "changed": list(self.changed),
                "unchanged": len(self.unchanged),
                "deleted": list(self.deleted),
            },
            "skipped": [{"where": w, "reason": r} for w, r in self.skipped],
            "index_version": self.version,
            "seconds": dict(self.seconds),
        }


# -- parsing ---------------------------------------------------------------------------------


def parse_import_file(path: Path) -> ParsedFile:
    """Read either format (told apart by content); InputError for a file that is neither."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(
            f"{path} is not UTF-8 text: not an embeddings.json or embeddings.jsonl file"
        ) from None
    whole = _json_object(text)
    if whole is not None and isinstance(whole.get("chunks"), list):
        items = [(f"chunks[{i}]", item) for i, item in enumerate(whole["chunks"])]
        return _parse_rows(items, "embeddings.json", path)
    if whole is not None:
        raise InputError(f"{path} is one JSON object without a 'chunks' list: not an embeddings.json file")
    return _parse_rows(list(_jsonl_items(text, path)), "embeddings.jsonl", path)


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None  # several objects: JSON lines
    return value if isinstance(value, dict) else None


def _jsonl_items(text: str, path: Path) -> Iterator[tuple[str, Any]]:
    for number, item in json_lines(text.splitlines()):
        if number == 1 and isinstance(item, json.JSONDecodeError):
            raise InputError(f"{path} is neither embeddings.json nor JSON lines: line 1: {item.msg}")
        yield f"line {number}", item  # a line that is not JSON is reported as a skipped row


def _parse_rows(items: Sequence[tuple[str, Any]], fmt: str, path: Path) -> ParsedFile:
    rows: list[Row] = []
    skipped: list[tuple[str, str]] = []
    vectors: list[tuple[int, np.ndarray]] = []
    for where, item in items:
        row_or_reason = _row(where, item, path, len(rows))
        if isinstance(row_or_reason, str):
            skipped.append((where, row_or_reason))
            continue
        if row_or_reason.vector is not None:
            vectors.append((len(rows), row_or_reason.vector))
        rows.append(row_or_reason)
    dims = [len(v) for _, v in vectors]
    dimension = max(set(dims), key=dims.count) if dims else None
    kept: list[Row] = []
    for row in rows:
        if row.vector is not None and len(row.vector) != dimension:
            skipped.append(
                (row.where, f"embedding of dimension {len(row.vector)}, the file's is {dimension}")
            )
            continue
        kept.append(row)
    if not kept:
        detail = "; ".join(f"{w}: {r}" for w, r in skipped[:3])
        raise InputError(
            f"nothing to import from {path}" + (f" ({detail})" if detail else ": it holds no rows")
        )
    return ParsedFile(fmt, tuple(kept), tuple(skipped), dimension)


def _row(where: str, item: Any, path: Path, index: int) -> Row | str:
    """A Row, or why the item is skipped."""
    if isinstance(item, Exception):
        return f"not JSON ({item.msg if isinstance(item, json.JSONDecodeError) else item})"
    if not isinstance(item, dict):
        return f"not a JSON object ({type(item).__name__})"
    text = next((item[k] for k in TEXT_FIELDS if isinstance(item.get(k), str)), "")
    if not text.strip():
        return "no text"
    vector = None
    if "embedding" in item and item["embedding"] is not None:
        vector = _vector(item["embedding"])
        if vector is None:
            return "embedding is not a non-empty list of finite numbers"
    source = next((str(item[k]) for k in SOURCE_FIELDS if item.get(k) not in (None, "")), path.as_posix())
    position = next((item[k] for k in POSITION_FIELDS if _is_int(item.get(k))), index)
    start, end = item.get("start_line"), item.get("end_line")
    lines = (start, end) if _is_int(start) and _is_int(end) and 1 <= start <= end else (None, None)
    meta = {k: v for k, v in item.items() if k not in ("embedding", *TEXT_FIELDS)}
    return Row(where, text, vector, source, int(position), *lines, meta)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _vector(value: Any) -> np.ndarray | None:
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value):
        return None
    return np.asarray(value, dtype=np.float32)


# -- rows to documents -----------------------------------------------------------------------


def documents(parsed: ParsedFile, path: Path, mtime: float) -> list[tuple[FileChunks, dict[str, np.ndarray]]]:
    """Rows grouped by source, in position order: each a document with its chunks, and the
    vectors of its chunk texts (by text sha256, normalised)."""
    groups: dict[str, list[Row]] = {}
    for row in parsed.rows:
        groups.setdefault(row.source, []).append(row)
    out = []
    for source, rows in groups.items():
        rows.sort(key=lambda r: r.position)
        spans, vectors, line = [], {}, 1
        digest = hashlib.sha256()
        for row in rows:
            n_lines = row.text.count("\n") + 1
            start, end = (row.start_line, row.end_line) if row.start_line else (line, line + n_lines - 1)
            line = end + 1
            sha = hashlib.sha256(row.text.encode("utf-8")).hexdigest()
            spans.append(ChunkSpan(row.text, start, end, count_tokens(row.text), sha, row.meta))
            digest.update(json.dumps([row.text, row.meta, start, end], sort_keys=True, default=str).encode())
            if row.vector is not None:
                vectors[sha] = row.vector
                digest.update(row.vector.tobytes())
        source_type, language = classify(source)
        size = sum(len(r.text.encode("utf-8")) for r in rows)
        meta = {IMPORTED_FROM: path.as_posix()}
        loaded = LoadedFile(source, "", digest.hexdigest(), size, mtime, source_type, language, meta)
        out.append((FileChunks(loaded, tuple(spans)), vectors))
    return out


def unit_rows(vectors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Vectors scaled to unit length (a zero vector stays zero), each as one (1, d) window."""
    out = {}
    for sha, v in vectors.items():
        norm = float(np.linalg.norm(v))
        out[sha] = (v / norm if norm > 0 else v).astype(np.float32)[None, :]
    return out


# -- the import ------------------------------------------------------------------------------


def import_file(
    path: str | Path,
    store: MetadataStore,
    embedder: Embedder,
    builder: IndexBuilder,
    *,
    collection: str | None = None,
) -> ImportReport:
    """Import one file into the store and the indices (see the module docstring)."""
    path = Path(path).resolve()
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    parsed = parse_import_file(path)
    docs = documents(parsed, path, path.stat().st_mtime)
    seconds["read"] = time.perf_counter() - start
    collection = collection or path.stem
    stored = {d.path: d for d in store.documents()}
    added, changed, unchanged = [], [], []
    for fc, _ in docs:
        before = stored.get(fc.file.path)
        if before is None:
            added.append(fc.file.path)
        elif (before.sha256, before.collection) != (fc.file.sha256, collection):
            changed.append(fc.file.path)
        else:
            unchanged.append(fc.file.path)
    mine = {fc.file.path for fc, _ in docs}
    deleted = sorted(
        p for p, d in stored.items() if d.meta.get(IMPORTED_FROM) == path.as_posix() and p not in mine
    )
    todo = set(added) | set(changed)
    reuse = parsed.dimension == embedder.dimension
    vectors = {sha: v for fc, vs in docs if fc.file.path in todo for sha, v in vs.items()} if reuse else {}
    t = time.perf_counter()
    if todo or deleted:
        store.write_files(
            [fc for fc, _ in docs if fc.file.path in todo],
            collection=collection,
            delete_paths=deleted,
            embeddings=unit_rows(vectors),
            model=embedder.model_name,
        )
    seconds["store"] = time.perf_counter() - t
    t = time.perf_counter()
    build = builder.build(reason=f"import {path.name}") if (todo or deleted or builder.is_stale()) else None
    seconds["index"] = time.perf_counter() - t
    return ImportReport(
        file=path.as_posix(),
        format=parsed.format,
        rows=len(parsed.rows),
        reused_vectors=len(vectors),
        embedded=build.embedded if build is not None else 0,
        dimension=parsed.dimension,
        model_dimension=embedder.dimension,
        added=tuple(added),
        changed=tuple(changed),
        unchanged=tuple(unchanged),
        deleted=tuple(deleted),
        skipped=parsed.skipped,
        version=build.version if build is not None else None,
        seconds=seconds,
    )
