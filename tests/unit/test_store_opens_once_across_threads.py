"""A new store first used by several threads at once (a server's first requests) is created once:
no thread sees "table already exists", and all share one SQLAlchemy engine."""

from __future__ import annotations

import threading
from pathlib import Path

from hybrid_rag.store import MetadataStore


def _first_use_from(threads: int, store: MetadataStore) -> tuple[list[BaseException], set[int]]:
    barrier = threading.Barrier(threads)
    failures: list[BaseException] = []
    makers: set[int] = set()

    def first_use() -> None:
        barrier.wait()
        try:
            assert store.counts()["documents"] == 0
            makers.add(id(store._open()))
        except BaseException as exc:
            failures.append(exc)

    workers = [threading.Thread(target=first_use) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return failures, makers


def test_first_use_from_eight_threads_creates_the_schema_once(tmp_path: Path) -> None:
    for trial in range(5):  # without the store's lock the race showed on every trial
        store = MetadataStore(tmp_path / f"trial{trial}" / "store.sqlite3")
        failures, makers = _first_use_from(8, store)
        store.close()
        assert failures == []
        assert len(makers) == 1
