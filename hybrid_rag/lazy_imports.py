"""Keep optional heavy packages out of a process that does not need them.

Some libraries probe for optional packages when they are imported, whatever they are used for:
spaCy's thinc imports torch (seconds) and bm25s imports numba (about 1.5 s), although hybrid-rag
uses only spaCy's rule-based tokenizer and bm25s's numpy scoring. :func:`hidden_modules` makes
such a probe find nothing, for the duration of one import.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hidden_modules(*names: str) -> Iterator[None]:
    """While inside, ``import name`` raises ImportError for each of ``names`` not yet imported
    (an already imported module stays visible); afterwards they import normally again.

    >>> with hidden_modules("no_such_probe"):
    ...     try:
    ...         import no_such_probe
    ...     except ImportError:
    ...         print("hidden")
    hidden
    """
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment] - the import system's "not importable"
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
