"""A running server whose store file vanished, or whose index pointer is corrupt, answers 503 with
the one-line reason (docs/serving.md), never a 500; it serves again once the store is restored."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from live_server import LiveServer

QUERY = {"query": "circle area radius", "top_k": 3}


def test_a_vanished_store_is_a_503_naming_it_and_a_restored_one_serves(
    live: LiveServer, tmp_path: Path
) -> None:
    store = tmp_path / "data" / "store.sqlite3"
    with live.client() as client:
        assert client.post("/v1/query", json=QUERY).status_code == 200
        with sqlite3.connect(store) as source, sqlite3.connect(tmp_path / "backup.sqlite3") as backup:
            source.backup(backup)  # a consistent copy, WAL included
        os.unlink(store)
        for extra in store.parent.glob(store.name + "-*"):
            extra.unlink()
        for answer in (client.post("/v1/query", json=QUERY), client.get("/v1/stats")):
            assert answer.status_code == 503
            assert "is missing but index v1 is live" in answer.json()["error"]["message"]
        shutil.copy(tmp_path / "backup.sqlite3", store)
        assert client.post("/v1/query", json=QUERY).status_code == 200


def test_a_corrupt_pointer_is_a_503_naming_it(live: LiveServer, tmp_path: Path) -> None:
    pointer = tmp_path / "data" / "indices" / "CURRENT"
    with live.client() as client:
        for raw in (b"abc", b"\xff\xfe"):
            pointer.write_bytes(raw)
            answer = client.post("/v1/query", json=QUERY)
            assert answer.status_code == 503 and "CURRENT" in answer.json()["error"]["message"]
        pointer.unlink()
        pointer.mkdir()
        answer = client.post("/v1/query", json=QUERY)
        assert answer.status_code == 503 and "is a folder" in answer.json()["error"]["message"]
