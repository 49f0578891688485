"""User-facing errors: each carries one clear line that the CLI prints without a traceback."""

from __future__ import annotations


class HybridRagError(Exception):
    """Base class for every error a user can cause and fix (bad input, missing index, ...)."""


class ConfigError(HybridRagError):
    """A configuration file or override is malformed; the message names the key."""


class InputError(HybridRagError):
    """A path, file, archive or query the engine cannot take."""


class NoIndexError(HybridRagError):
    """Nothing has been ingested (or indexed) yet."""

    def __init__(self, message: str = "no index yet: run `hybrid-rag ingest PATH`") -> None:
        super().__init__(message)


class IndexMismatchError(HybridRagError):
    """An index on disk was built with another model, dimension or parameters."""


class CorruptIndexError(HybridRagError):
    """An index file is missing, truncated or fails its checksum."""


class StoreError(HybridRagError):
    """The metadata store is unreadable or written by an incompatible schema."""


class ModelError(HybridRagError):
    """A model could not be loaded (not cached, not installed, wrong path)."""


class RemoteServiceError(HybridRagError):
    """A generator or reranker server did not answer, or answered badly."""


def describe(exc: BaseException) -> str:
    """One line for a note: ``Type: first line of the message`` (at most 200 characters), or the
    type alone when there is no message."""
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text.splitlines()[0][:200]}" if text else name


class WriterBusyError(StoreError):
    """Another process (or thread) holds the data dir's writer lock (``store/writer_lock.py``)."""
