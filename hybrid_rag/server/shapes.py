"""The JSON shapes the HTTP API and the MCP server answer with: the CLI's ``--json`` shapes, built
from the engine's report types (``to_dict``); nothing here computes anything of its own."""

from __future__ import annotations

from typing import Any

from hybrid_rag.context import Context
from hybrid_rag.context.selfcheck import Checked
from hybrid_rag.paths import display_path
from hybrid_rag.store import DocumentRecord
from hybrid_rag.types import QueryResult


def query_dict(result: QueryResult, checked: Checked | None) -> dict[str, Any]:
    """``hybrid-rag query --json``."""
    return {**result.to_dict(), **({"self_check": checked.to_dict()} if checked is not None else {})}


def context_dict(context: Context, checked: Checked | None) -> dict[str, Any]:
    """``hybrid-rag context --json``."""
    data = context.to_dict()
    if checked is not None:
        data["self_check"] = checked.to_dict()
    data["trace"] = context.result.trace.to_dict()
    return data


def document_dict(record: DocumentRecord, root: str | None = None) -> dict[str, Any]:
    """A stored document; its path relative to ``root`` (the ingested root) by the one rule."""
    return {
        "id": record.id,
        "path": display_path(record.path, root),
        "collection": record.collection,
        "source_type": record.source_type.value,
        "language": record.language,
        "languages": dict(record.languages),
        "size": record.size,
        "sha256": record.sha256,
        "ingested_at": record.ingested_at.isoformat(),
        "meta": dict(record.meta),
    }
