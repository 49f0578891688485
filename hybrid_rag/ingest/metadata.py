"""Custom metadata on documents: Markdown front matter, and the fields a caller attaches.

Front matter is a YAML mapping between a first line ``---`` and the next ``---`` (or ``...``) line
of a Markdown file; it becomes the document's metadata (dates as ISO strings) and stays in the
text. Metadata a caller attaches (``Engine.ingest(..., metadata={...})``) goes over the front
matter, and is folded into the document's hash, so changing it re-writes the document.
Filters reach every key as ``meta.<key>`` (``filters/``).

Both are bounded, since a small hostile block can cost without end: YAML aliases ("billion
laughs": ~600 bytes that expand to 10^9 values), nesting hundreds of levels deep, a date the
calendar lacks (``0000-01-01``, ``2024-02-30``). Front matter over ``FRONT_MATTER_MAX_BYTES``,
``METADATA_MAX_DEPTH`` levels, ``FRONT_MATTER_MAX_ALIASES`` aliases or ``METADATA_MAX_VALUES``
values once expanded, or that YAML cannot construct, skips its file with the reason
(``FrontMatterError``); a caller's metadata over the depth or value limits is an InputError
(HTTP 422 ``metadata``) before any work starts.
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

from hybrid_rag.errors import InputError
from hybrid_rag.types import LoadedFile, SkippedFile

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
FRONT_MATTER_MAX_BYTES = 65_536  # the YAML block of one file
FRONT_MATTER_MAX_ALIASES = 64  # `*name` references in one block
METADATA_MAX_DEPTH = 32  # levels of mappings and lists
METADATA_MAX_VALUES = 10_000  # values once aliases are expanded (what the store and filters hold)


class FrontMatterError(InputError):
    """Front matter (or a caller's metadata) over a limit, or a value YAML cannot construct."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses nesting over ``METADATA_MAX_DEPTH`` before composing it (the composer
    recurses a level a frame) and more than ``FRONT_MATTER_MAX_ALIASES`` aliases."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > FRONT_MATTER_MAX_ALIASES:
                raise FrontMatterError(f"front matter has over {FRONT_MATTER_MAX_ALIASES} YAML aliases")
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > METADATA_MAX_DEPTH:
                raise FrontMatterError(f"front matter nested over {METADATA_MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def plain(value: Any, *, what: str = "metadata") -> Any:
    """A YAML value as JSON holds it: dates and datetimes as ISO strings, other scalars as they are.
    Raises FrontMatterError past ``METADATA_MAX_DEPTH`` levels or ``METADATA_MAX_VALUES`` values
    (shared values, YAML's aliases, count each time they appear), without recursion."""
    budget = [METADATA_MAX_VALUES]

    def one(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise FrontMatterError(f"{what} expands to over {METADATA_MAX_VALUES} values")
        if isinstance(item, (datetime, date)):
            return item.isoformat()
        if isinstance(item, (Mapping, list, tuple)) and depth >= METADATA_MAX_DEPTH:
            raise FrontMatterError(f"{what} nested over {METADATA_MAX_DEPTH} levels deep")
        if isinstance(item, Mapping):
            return {str(k): one(v, depth + 1) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [one(v, depth + 1) for v in item]
        if item is None or isinstance(item, (str, int, float, bool)):
            return item
        return str(item)

    return one(value, 0)


def check_metadata(metadata: Mapping[str, Any] | None) -> None:
    """Raise FrontMatterError (an InputError naming the limit) when a caller's metadata is nested
    over ``METADATA_MAX_DEPTH`` levels or holds over ``METADATA_MAX_VALUES`` values; iterative, so
    a body nested thousands deep is refused, not a RecursionError."""
    if not metadata:
        return
    stack: list[tuple[Any, int]] = [(metadata, 1)]
    values = 0
    while stack:
        item, depth = stack.pop()
        values += 1
        if values > METADATA_MAX_VALUES:
            raise FrontMatterError(f"metadata holds over {METADATA_MAX_VALUES} values")
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > METADATA_MAX_DEPTH:
            raise FrontMatterError(f"metadata nested over {METADATA_MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)


def front_matter(text: str) -> dict[str, Any]:
    """The front matter of a Markdown text as a dict; {} when there is none or it is not a
    YAML mapping (a broken block is text like any other, never an error). Raises FrontMatterError
    when the block is over a limit (module docstring) or holds a value YAML cannot construct
    (``date: 2024-02-30``).

    >>> front_matter("---\\ntype: guide\\ndate: 2024-06-01\\n---\\n# Title\\n")
    {'type': 'guide', 'date': '2024-06-01'}
    """
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}
    block = match.group(1) or ""
    size = len(block.encode("utf-8"))
    if size > FRONT_MATTER_MAX_BYTES:
        raise FrontMatterError(f"front matter of {size} bytes, over {FRONT_MATTER_MAX_BYTES}")
    try:
        data = yaml.load(block, Loader=_BoundedLoader)
    except yaml.YAMLError:
        return {}
    except (ValueError, OverflowError, TypeError, RecursionError) as exc:  # 0000-01-01, 2024-02-30
        raise FrontMatterError(f"front matter value YAML cannot read ({exc})") from None
    return plain(data, what="front matter") if isinstance(data, dict) else {}


def with_front_matter(file: LoadedFile) -> LoadedFile | SkippedFile:
    """A Markdown file with its front matter as metadata (its hash is of the bytes, which hold it),
    or the file skipped with the reason its front matter is refused."""
    if file.language != "markdown":
        return file
    try:
        meta = front_matter(file.text)
    except FrontMatterError as exc:
        return SkippedFile(file.path, str(exc))
    return replace(file, meta={**meta, **file.meta}) if meta else file


def with_metadata(file: LoadedFile, metadata: Mapping[str, Any] | None) -> LoadedFile:
    """``file`` with ``metadata`` over its own; the hash covers the metadata, so a change re-writes it."""
    if not metadata:
        return file
    meta = {**file.meta, **plain(dict(metadata))}  # check_metadata bounds it (depth, values)
    return replace(file, meta=meta, sha256=metadata_hash(file.sha256, meta))


def metadata_hash(sha256: str, meta: Mapping[str, Any]) -> str:
    """The hash of a document whose bytes hash to ``sha256`` stored with attached ``meta``."""
    blob = json.dumps(meta, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(sha256.encode() + b"\0" + blob).hexdigest()
