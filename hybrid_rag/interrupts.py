"""Ctrl-C that lets an ingest stop after its current batch, without hiding it from the process.

``ctrl_c_stops`` sets an event at the first Ctrl-C (SIGINT) instead of raising, so the ingest and
``watch`` can finish a batch and leave the index as it was; a second Ctrl-C raises at once. The
first is also handed to the handler that was there before (its KeyboardInterrupt swallowed): a
program that runs the CLI in its own process (the test run's ``tests/conftest.py``: a Ctrl-C stops
the run after the test it lands in) learns of it. Without that, a Ctrl-C landing in an in-process
ingest was absorbed here, the CLI returned 130 as any test might, and the run went on until the
second Ctrl-C (RESULTS.md#first-hour-again: "one run out of three still went on for 100 s").
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any


@contextmanager
def ctrl_c_stops() -> Iterator[threading.Event]:
    """While open, the first Ctrl-C sets the event (and reaches the previous handler, whose
    KeyboardInterrupt is swallowed); the next raises KeyboardInterrupt (exit 130 all the same).
    Off the main thread, or where SIGINT is ignored (a background job), Ctrl-C keeps its meaning."""
    event = threading.Event()
    previous: Any = None

    def first(signum: int, frame: Any) -> None:
        event.set()
        signal.signal(signal.SIGINT, previous if callable(previous) else signal.default_int_handler)
        if callable(previous) and previous is not signal.default_int_handler:
            with suppress(KeyboardInterrupt):
                previous(signum, frame)

    previous = signal.getsignal(signal.SIGINT)
    installed = previous is not signal.SIG_IGN
    try:
        if installed:
            signal.signal(signal.SIGINT, first)
    except ValueError:  # not the main thread
        installed = False
    if not installed:
        yield event
        return
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
