"""What the framework retrievers search: a local Engine (given, or opened on a data dir) or a remote
server through ``hybrid_rag.client.Client``, answering the same hit dicts either way.

A hit is a row of ``hybrid-rag query --json`` (``ScoredChunk.to_dict``); ``hit_metadata`` is the part
of it a framework document carries as metadata. Errors are the engine's (a remote server's errors
are raised as the same types by the client).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hybrid_rag.client import Client
    from hybrid_rag.engine import Engine

METADATA_KEYS = ("id", "path", "start_line", "end_line", "source_type", "language", "collection")


class Source:
    """One of ``engine``, ``data_dir`` (an Engine opened on first use) or ``client``."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        client: Client | None = None,
    ) -> None:
        given = [
            name
            for name, v in (("engine", engine), ("data_dir", data_dir), ("client", client))
            if v is not None
        ]
        if len(given) > 1:
            raise ValueError(f"give one of engine, data_dir or client, not {' and '.join(given)}")
        if not given:
            raise ValueError("give an engine, a data_dir or a client to search")
        self._engine, self._data_dir, self.client = engine, data_dir, client
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine | None:
        """The local engine (opened on first use from ``data_dir``), None for a remote client."""
        if self._engine is None and self._data_dir is not None:
            with self._lock:
                if self._engine is None:
                    from hybrid_rag.engine import Engine

                    self._engine = Engine.open(self._data_dir)
        return self._engine

    def search(
        self,
        text: str,
        *,
        top_k: int | None = None,
        filters: Any = None,
        mode: str | None = None,
        features: Mapping[str, bool] | None = None,
        group: str | None = None,
    ) -> tuple[list[dict[str, Any]], int | None]:
        """The hits for ``text`` and the index version that answered; with ``group="file"`` one hit
        per file (``file_hits``), ranked by its evidence (``retrieval/grouping.py``)."""
        grouping = {"group": group} if group is not None else {}
        if self.client is not None:
            data = self.client.query(
                text, top_k=top_k, mode=mode, filters=filters, features=features, **grouping
            )
        else:
            engine = self.engine
            assert engine is not None
            from hybrid_rag.request import Query  # the engine's typed request; loaded with the engine

            query = Query(text, top_k=top_k, mode=mode, filters=filters, features=features)
            result = engine.query(query, **grouping)
            data = result.to_dict()
        if "files" in data:
            return file_hits(data), data.get("index_version")
        return list(data["results"]), data.get("index_version")


def file_hits(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One hit per file of a grouped answer (``query --json --group file``): its id is its path, its
    text its units' texts in their order (best first), its lines and citation its best unit's, and
    ``units`` its units' ids, line ranges and scores."""
    by_id = {hit["id"]: hit for hit in data["results"]}
    hits = []
    for f in data["files"]:
        units = [by_id[u["id"]] for u in f["units"]]
        best = units[0]
        hits.append(
            {
                **{k: best[k] for k in ("start_line", "end_line", "citation", "collection") if k in best},
                "id": f["path"],
                "path": f["path"],
                "source_type": f["source_type"],
                "language": f["language"],
                "score": f["score"],
                "breakdown": {},
                "text": "\n\n".join(u["text"] for u in units),
                "units": [dict(u) for u in f["units"]],
            }
        )
    return hits


def hit_metadata(hit: Mapping[str, Any], index_version: int | None) -> dict[str, Any]:
    """The metadata a framework document carries: where the text is, its citation, its scores."""
    meta = {k: hit[k] for k in METADATA_KEYS if k in hit}
    meta["citation"] = hit["citation"]  # ScoredChunk.located_citation: a converted document's page too
    meta["score"] = hit["score"]
    meta["breakdown"] = dict(hit.get("breakdown") or {})
    meta["index_version"] = index_version
    if "units" in hit:  # a file of a grouped answer: its best units
        meta["units"] = [dict(u) for u in hit["units"]]
    if hit.get("meta"):
        meta["meta"] = dict(hit["meta"])
    return meta
