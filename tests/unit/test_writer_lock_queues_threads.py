"""The writer lock within one process: a holder may take it again (an ingest's build), another
thread waits its turn or, past ``wait_seconds``, gets the holder's pid and command."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from hybrid_rag.errors import StoreError, WriterBusyError
from hybrid_rag.store.writer_lock import WriterLock


def test_a_holder_takes_it_again_and_other_threads_queue(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, 5.0)
    order: list[str] = []
    inside = threading.Event()

    def second() -> None:
        inside.wait()
        with lock.hold("delete"):
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    with lock.hold("ingest"), lock.hold("ingest"):  # re-entered by its holder
        inside.set()
        thread.join(0.3)
        order.append("first")
    thread.join()
    assert order == ["first", "second"]


def test_past_the_wait_another_thread_is_told_who_holds_it(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, 0.0)
    errors: list[str] = []

    def other() -> None:
        try:
            with lock.hold("rebuild"):
                pass
        except WriterBusyError as exc:
            errors.append(str(exc))

    with lock.hold("ingest"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert len(errors) == 1 and f"(ingest by pid {os.getpid()}, since " in errors[0]
    with lock.hold("rebuild"):  # free again
        pass


def test_a_data_dir_that_cannot_hold_the_lock_file_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="is not a folder"), WriterLock(tmp_path / "file", 0.0).hold("x"):
        pass
