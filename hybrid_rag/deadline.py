"""A deadline for the work of one request, so that a request that timed out stops its work.

The server sets one around each engine call (``server.request_timeout_seconds``; the MCP tools
too). It is checked where work can run long: SQLite calls ``past_deadline`` every
``PROGRESS_STEPS`` steps of a statement (the store registers it on every connection; a non-zero
answer interrupts the statement), PostgreSQL gets the time left as the statement's
``statement_timeout``, a filter's SQL is checked while it is built and compiled (a long chain of
``meta.`` comparisons spends seconds there, in Python, before the database sees it), and the query
pipeline checks it between its stages. Outside
``within`` there is no deadline and every check is one context-variable read.

>>> with within(30.0):
...     check()  # raises DeadlineExceeded once 30 s have passed
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from hybrid_rag.errors import HybridRagError

T = TypeVar("T")
PROGRESS_STEPS = 10_000  # SQLite virtual-machine steps between two checks (microseconds of work)
_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("hybrid_rag_deadline", default=None)


class DeadlineExceeded(HybridRagError):
    """The request's time ran out; its work was stopped."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Work in this block (this thread, this context) stops after ``seconds``."""
    token = _DEADLINE.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def past_deadline() -> bool:
    """Whether the current deadline has passed (SQLite's progress handler: True interrupts)."""
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() > deadline[0]


def remaining() -> float | None:
    """Seconds left before the current deadline (0 once past it); None without a deadline."""
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline[0] - time.monotonic())


def check() -> None:
    """DeadlineExceeded once the current deadline has passed."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline[0]:
        raise DeadlineExceeded(f"stopped after {deadline[1]:g} s: the request's time ran out")


def run_within(seconds: float, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` under a deadline of ``seconds``; an error raised once the deadline has
    passed (SQLite's "interrupted", or any other) becomes DeadlineExceeded."""
    with within(seconds):
        try:
            return fn(*args, **kwargs)
        except DeadlineExceeded:
            raise
        except Exception as exc:
            if past_deadline():
                raise DeadlineExceeded(f"stopped after {seconds:g} s: the request's time ran out") from exc
            raise
