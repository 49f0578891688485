"""A model loaded on first use, once, whichever thread asks first (the embedders and the reranker)."""

from __future__ import annotations

import threading
from typing import Any


class LoadsOnce:
    """``model`` is ``_load()``'s result, loaded on first use under a lock (double-checked: a
    loaded model is read without it). Subclasses call ``LoadsOnce.__init__`` and define ``_load``."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        raise NotImplementedError

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model
