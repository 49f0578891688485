"""Custom metadata on documents: Markdown front matter, and the fields a caller attaches.

Front matter is a YAML mapping between a first line ``---`` and the next ``---`` (or ``...``) line
of a Markdown file; it becomes the document's metadata (dates as ISO strings) and stays in the
text. Metadata a caller attaches (``Engine.ingest(..., metadata={...})``) goes over the front
matter, and is folded into the document's hash, so changing it re-writes the document.
Filters reach every key as ``meta.<key>`` (``filters/``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import date, datetime
from typing import Any

import yaml

from hybrid_rag.types import LoadedFile

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)


def plain(value: Any) -> Any:
    """A YAML value as JSON holds it: dates and datetimes as ISO strings, other scalars as they are."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def front_matter(text: str) -> dict[str, Any]:
    """The front matter of a Markdown text as a dict; {} when there is none or it is not a
    YAML mapping (a broken block is text like any other, never an error).

    >>> front_matter("---\\ntype: guide\\ndate: 2024-06-01\\n---\\n# Title\\n")
    {'type': 'guide', 'date': '2024-06-01'}
    """
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}
    try:
        data = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError:
        return {}
    return plain(data) if isinstance(data, dict) else {}


def with_front_matter(file: LoadedFile) -> LoadedFile:
    """A Markdown file with its front matter as metadata (its hash is of the bytes, which hold it)."""
    if file.language != "markdown":
        return file
    meta = front_matter(file.text)
    return replace(file, meta={**meta, **file.meta}) if meta else file


def with_metadata(file: LoadedFile, metadata: Mapping[str, Any] | None) -> LoadedFile:
    """``file`` with ``metadata`` over its own; the hash covers the metadata, so a change re-writes it."""
    if not metadata:
        return file
    meta = {**file.meta, **plain(dict(metadata))}
    return replace(file, meta=meta, sha256=metadata_hash(file.sha256, meta))


def metadata_hash(sha256: str, meta: Mapping[str, Any]) -> str:
    """The hash of a document whose bytes hash to ``sha256`` stored with attached ``meta``."""
    blob = json.dumps(meta, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(sha256.encode() + b"\0" + blob).hexdigest()
