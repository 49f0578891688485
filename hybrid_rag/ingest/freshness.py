"""Whether the files behind stored documents are still what was indexed: stale citations.

The store records each document's size, mtime and sha256 (of the bytes, or over them and the
metadata an ingest attached: ``metadata.metadata_hash``). A file whose size and mtime are the
recorded ones is taken as unchanged without being read (the fast path ``ingest`` and ``status``
use too); one whose size moved has changed; one whose mtime alone moved is hashed, once per
(path, size, mtime_ns) in the process, and is unchanged when the hash is the recorded one (a
``touch``). Documents that are not files on disk are never stale: a zip member, an import's
rows (``imported_from``), a dataset's or the API's in-memory texts (mtime 0, or a path that is
not absolute).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

from hybrid_rag.ingest.importer import IMPORTED_FROM
from hybrid_rag.ingest.metadata import metadata_hash
from hybrid_rag.store import DocumentRecord, MetadataStore
from hybrid_rag.types import LoadedFile, QueryResult

FRESH = ""
CHANGED = "changed"  # the file on disk is not the bytes that were indexed
MISSING = "missing"  # the file is gone from disk
_READ = 1 << 20


def from_file(doc: DocumentRecord) -> bool:
    """Whether ``doc`` was read from a file on disk that can change under it."""
    return doc.path.startswith("/") and doc.mtime != 0 and IMPORTED_FROM not in doc.meta


def _in_archive(path: str) -> bool:
    """Whether ``path`` names a member of a zip (``<zip path>/<member>``) rather than a file."""
    return any(p.suffix.lower() == ".zip" and not os.path.isdir(p) for p in PurePosixPath(path).parents)


class Freshness:
    """Compares stored documents with their files; hashes are cached per (path, size, mtime_ns)."""

    def __init__(self) -> None:
        self._hashes: dict[tuple[str, int, int], str] = {}
        self._lock = threading.Lock()
        self.hashed = 0  # files read to hash (the fast path failed): for tests and `status --json`

    def check(self, doc: DocumentRecord) -> str:
        """FRESH, CHANGED or MISSING for one document."""
        if not from_file(doc):
            return FRESH
        try:
            st = os.stat(doc.path)
        except NotADirectoryError:  # a component is a file: a zip member
            return FRESH
        except FileNotFoundError:
            return FRESH if _in_archive(doc.path) else MISSING
        except OSError:
            return CHANGED  # unreadable now: not what was indexed, as far as anyone can tell
        if not stat.S_ISREG(st.st_mode):
            return MISSING
        return self.compare(doc, st)

    def compare(self, doc: DocumentRecord, st: os.stat_result) -> str:
        """FRESH or CHANGED for a document whose file stats as ``st``."""
        if st.st_size != doc.size:
            return CHANGED
        if st.st_mtime == doc.mtime:
            return FRESH
        digest = self._hash(doc.path, st)
        if digest is None:
            return CHANGED
        known = {digest, metadata_hash(digest, doc.meta)} if doc.meta else {digest}
        return FRESH if doc.sha256 in known else CHANGED

    def _hash(self, path: str, st: os.stat_result) -> str | None:
        key = (path, st.st_size, st.st_mtime_ns)
        with self._lock:
            if key in self._hashes:
                return self._hashes[key]
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                while block := f.read(_READ):
                    digest.update(block)
        except OSError:
            return None
        with self._lock:
            self.hashed += 1
            self._hashes[key] = digest.hexdigest()
        return digest.hexdigest()


def unchanged_by_stat(
    documents: Iterable[DocumentRecord],
) -> Callable[[str, os.stat_result], LoadedFile | None]:
    """The ``known`` hook of a walk (``loaders.load_file``) that answers a stored file whose size and
    mtime are those recorded with its stored row, unread, so an ingest plans it unchanged. Files
    with metadata are left to be read: their hash may cover attached metadata (``metadata.py``)."""
    rows = {d.path: d for d in documents if from_file(d) and not d.meta}

    def known(path: str, st: os.stat_result) -> LoadedFile | None:
        doc = rows.get(path)
        if doc is None or st.st_size != doc.size or st.st_mtime != doc.mtime:
            return None
        return LoadedFile(path, "", doc.sha256, doc.size, doc.mtime, doc.source_type, doc.language)

    return known


def mark_stale(result: QueryResult, store: MetadataStore, freshness: Freshness) -> QueryResult:
    """``result`` with each chunk's ``stale`` set from its document's file (stored paths: call it
    before the paths are shown relative to the root). One store read for the documents cited."""
    if not result.chunks:
        return result
    docs = store.documents_by_id(sc.chunk.document_id for sc in result.chunks)
    verdicts: dict[int, str] = {}
    for doc_id, doc in docs.items():
        verdicts[doc_id] = freshness.check(doc)
    if not any(verdicts.values()):
        return result
    chunks = tuple(
        dataclasses.replace(sc, stale=verdicts.get(sc.chunk.document_id, FRESH)) for sc in result.chunks
    )
    return dataclasses.replace(result, chunks=chunks)
