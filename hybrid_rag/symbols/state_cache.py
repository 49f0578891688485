"""What the reference questions read, kept for the store state they read it at.

A store state's rows never change (a document revision's symbols and references are written once;
a later ingest writes new revisions at a later state), so a ``callers`` answer need not read again
what the last one read at the same state: the definitions a name names, the imports of a file,
the definitions holding uses, the uses of a name, a name's targets. ``for_state`` keeps one
``StateCache`` per (store, state) for the last ``STATES`` states; the current state (``state``
None, a store read without a served version) is never kept, since it moves with every ingest.

Measured on Django's ``django/`` (RESULTS.md#callers-latency): the SQL statements an answer ran,
and SQLAlchemy building them, were most of a warm ``callers`` answer; the same name asked again,
or a name whose callers' files were read before, now reads nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from hybrid_rag.code.bindings import BINDING
from hybrid_rag.symbols.model import Reference
from hybrid_rag.symbols.references import CALLS, ReferenceSource, Resolver

STATES = 2  # the served state and the one before it (a reader mid-swap)
ENTRIES = 4096  # reads kept a state: the uses of a name, a name's targets

T = TypeVar("T")


class StateCache:
    """One store state's ``Resolver`` (its caches kept across answers) and its reads by key."""

    def __init__(self, source: ReferenceSource, state: int) -> None:
        self.resolver = Resolver(source, state)
        self.source = source
        self.state = state
        self._reads: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, key: Hashable, load: Callable[[], T]) -> T:
        with self._lock:
            if key in self._reads:
                self._reads.move_to_end(key)
                return self._reads[key]  # type: ignore[no-any-return]
        value = load()  # outside the lock: two threads may both read, never block each other
        with self._lock:
            self._reads[key] = value
            while len(self._reads) > ENTRIES:
                self._reads.popitem(last=False)
        return value

    def references(self, names: Sequence[str], kinds: Sequence[str] | None) -> list[Reference]:
        key = ("refs", tuple(names), tuple(kinds) if kinds else None)
        return self.read(key, lambda: self.source.references(names=names, kinds=kinds, state=self.state))


_CACHES: weakref.WeakKeyDictionary[Any, OrderedDict[int, StateCache]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def for_state(source: ReferenceSource, state: int | None) -> StateCache | None:
    """The cache of ``source`` at ``state`` (None for the moving current state, or a source that
    cannot be weakly referenced: read every time)."""
    if state is None:
        return None
    with _LOCK:
        try:
            states = _CACHES.setdefault(source, OrderedDict())
        except TypeError:
            return None
        cache = states.get(state)
        if cache is None:  # through a proxy: the cache must not keep its store (the key) alive
            cache = states[state] = StateCache(weakref.proxy(source), state)
            while len(states) > STATES:
                states.popitem(last=False)
        states.move_to_end(state)
        return cache


def resolver(source: ReferenceSource, state: int | None) -> Resolver:
    """The state's shared ``Resolver``, or a fresh one (its caches for one answer)."""
    cache = for_state(source, state)
    return cache.resolver if cache is not None else Resolver(source, state)


def references(
    source: ReferenceSource, state: int | None, names: Sequence[str], kinds: Sequence[str] | None = None
) -> list[Reference]:
    """The uses of ``names`` (of ``kinds``) at ``state``, read once a state; a declaration
    (``binding``: a typed receiver's, code/bindings.py) is no use of a definition."""
    cache = for_state(source, state)
    if cache is None:
        found = source.references(names=names, kinds=kinds, state=state)
    else:
        found = cache.references(names, kinds)
    return found if kinds else [r for r in found if r.kind != BINDING]


def references_in(
    source: ReferenceSource, state: int | None, document_id: int, lines: tuple[int, int]
) -> list[Reference]:
    """The calls within ``lines`` of a document revision (a definition's body) at ``state``."""

    def load() -> list[Reference]:
        return source.references(document_ids=[document_id], kinds=CALLS, lines=lines, state=state)

    cache = for_state(source, state)
    return load() if cache is None else cache.read(("in", document_id, lines), load)
