"""Hub chunks measured against questions: a bank of pseudo-questions made from the corpus itself.

37.5 (RESULTS.md#hubness) found that the chunks that wrongly top unrelated questions are not hubs
among *chunks*: they are near *questions* (a doc comment written as the answer to "how ...?"). This
measures a chunk's radius against a bank of questions instead (QB-Norm, Bogolin et al. CVPR 2022;
CSLS's query side), with no query log: the bank is made from the corpus when a version is built.

* **The bank** (:func:`bank_texts`): each definition's doc comment (its first sentence, the
  symbols table's ``doc``) and each prose chunk's first sentence, 4 to 40 words, deduplicated,
  then sampled to at most ``index.question_bank_size`` by the hash of its text (deterministic: the
  same corpus, the same bank). Each question remembers the chunk it came from.
* **Embedded as queries** by the version's own model (``embed_queries``: a model's query prefix
  included), through the embedding cache under the model's name plus :data:`QUERY_CACHE` so a
  rebuild embeds only questions it has not seen.
* **Measured** (:func:`measure`): every chunk's vector against every bank question by inner
  product, a batch at a time; the chunk's own questions left out. Two radii a chunk: ``csls``, the
  mean cosine to its ``k`` nearest questions, and ``softmax``, twice the log-sum-exp of its
  cosines to the whole bank at temperature ``1/BETA`` over ``BETA`` (the inverted softmax's
  denominator, QB-Norm's IS, in the same ``2cos - r`` form so one wrapper applies either).
  An incremental build measures again from the cached bank: the product is chunks x bank.
* **Stored** as ``question_bank.npz`` (ids and both radii) beside ``hubness.npz``, named in the
  manifest (``question_bank: {k, chunks, questions, format, seconds, embedded}``); a version without
  it loads and ranks as before.
* **Applied** by ``features.question_hubness`` (per call too): :class:`hubness.HubCorrected` over the
  version's dense index with the radius ``retrieval.question_hubness_form`` names.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.hubness import (
    BATCH_FLOATS,
    Radii,
    chunk_vectors,
    read_table,
    with_radii,
    write_table,
)
from hybrid_rag.protocols import Embedder
from hybrid_rag.types import Chunk, SourceType, Tracer

if TYPE_CHECKING:
    from hybrid_rag.indices.built import LiveIndex

FILE = "question_bank.npz"
MANIFEST_KEY = "question_bank"
FORMAT_VERSION = 1
QUERY_CACHE = "#query"  # the embedding cache's model key for a model's query vectors
BETA = 20.0  # the inverted softmax's inverse temperature (QB-Norm's default)
FORMS = ("csls", "softmax")
MIN_WORDS, MAX_WORDS = 4, 40
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(])|\n\s*\n")
_MARKUP = re.compile(r"^[\s#>*=\-+|`~]+")
_HEADING = re.compile(r"^\s*(#{1,6}\s|[=\-~^]{3,}\s*$|\.\. )")  # a Markdown / reST heading, a directive


@dataclass(frozen=True)
class Question:
    text: str
    chunk_id: int  # the chunk it was made from: never counted against that chunk


@dataclass(frozen=True)
class QuestionRadii:
    """Each chunk's radius against the bank, by form (``csls``, ``softmax``)."""

    ids: np.ndarray  # int64, ascending
    csls: np.ndarray  # float32: mean cosine to its k nearest bank questions
    softmax: np.ndarray  # float32: 2 / BETA * log sum exp(BETA * cos) over the bank
    k: int
    questions: int

    def radii(self, form: str) -> Radii:
        if form not in FORMS:
            raise ValueError(f"question_hubness_form {form!r}: expected one of {FORMS}")
        return Radii(self.ids, self.csls if form == "csls" else self.softmax)

    def __len__(self) -> int:
        return len(self.ids)


def first_sentence(text: str) -> str:
    """A text's first sentence, headings and markup off, whitespace collapsed; "" when it is not
    4-40 words.

    >>> first_sentence("# Title\\n\\n* Parse a header line. Then more.")
    'Parse a header line.'
    """
    body = "\n".join(line for line in text.strip().splitlines() if not _HEADING.match(line))
    head = _SENTENCE_END.split(body.strip(), maxsplit=1)[0]
    lines = [_MARKUP.sub("", line).strip() for line in head.splitlines()]
    sentence = " ".join(w for line in lines for w in line.split())
    return sentence if MIN_WORDS <= len(sentence.split()) <= MAX_WORDS else ""


def _order(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bank_texts(docs: Iterable[tuple[str, int | None]], prose: Iterable[Chunk], size: int) -> list[Question]:
    """The bank: definitions' docs (``(doc, chunk_id)``) and prose chunks' first sentences, each text
    once (the lowest chunk id keeps it), the ``size`` whose sha256 sorts first."""
    found: dict[str, int] = {}
    candidates = [(first_sentence(doc), cid) for doc, cid in docs if cid is not None]
    candidates += [(first_sentence(c.text), c.id) for c in prose if c.source_type is SourceType.TEXT]
    for text, cid in candidates:
        if text and (text not in found or cid < found[text]):
            found[text] = int(cid)
    chosen = sorted(found, key=_order)[: max(size, 0)]
    return [Question(t, found[t]) for t in chosen]


class QueryVectors:
    """An embedder seen by the embedding cache as its own query side: ``embed_passages`` embeds
    queries, cached under the model's name plus :data:`QUERY_CACHE`."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model_name(self) -> str:
        return self.inner.model_name + QUERY_CACHE

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)


def embed_bank(store: Any, embedder: Embedder, bank: Sequence[Question]) -> tuple[np.ndarray, int]:
    """The bank's query vectors (unit rows, in bank order) and how many were newly embedded."""
    from hybrid_rag.store.embedding_cache import embed_missing

    by_sha = {_order(q.text): q.text for q in bank}
    windows, embedded = embed_missing(store, QueryVectors(embedder), by_sha, keep=True)
    rows = np.stack([windows[_order(q.text)][0] for q in bank]).astype(np.float32) if bank else None
    if rows is None:
        return np.zeros((0, embedder.dimension), dtype=np.float32), embedded
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.ascontiguousarray(rows / np.where(norms > 0, norms, 1.0)), embedded


def measure(
    ids: np.ndarray, vectors: np.ndarray, bank: np.ndarray, sources: np.ndarray, k: int
) -> QuestionRadii:
    """Each chunk's radii against ``bank`` (its questions' vectors; ``sources`` the chunk each came
    from, left out of that chunk's row). A chunk with fewer than ``k`` other questions averages
    those it has; with none, its radius is 0."""
    n, b = len(ids), len(bank)
    csls = np.zeros(n, dtype=np.float32)
    soft = np.zeros(n, dtype=np.float32)
    if not n or not b:
        return QuestionRadii(ids, csls, soft, k, b)
    take = min(k, b)
    step = max(1, BATCH_FLOATS // b)
    for start in range(0, n, step):
        sims = vectors[start : start + step] @ bank.T
        own = sources[None, :] == ids[start : start + step, None]
        sims = np.where(own, -np.inf, sims)
        held = np.isfinite(sims)
        top = -np.partition(-sims, take - 1, axis=1)[:, :take]
        top_held = np.isfinite(top)
        csls[start : start + step] = np.where(top_held, top, 0).sum(1) / np.maximum(top_held.sum(1), 1)
        peak = np.where(held, sims, -np.inf).max(axis=1, keepdims=True)
        peak = np.where(np.isfinite(peak), peak, 0.0)
        lse = peak[:, 0] + np.log(np.maximum(np.exp(BETA * (sims - peak)).sum(axis=1), 1e-30)) / BETA
        soft[start : start + step] = np.where(held.any(axis=1), 2.0 * lse, 0.0)
    return QuestionRadii(ids, csls, soft, k, b)


def save(table: QuestionRadii, directory: Path, seconds: float, embedded: int) -> dict[str, Any]:
    """Write ``question_bank.npz`` into ``directory`` (atomically); returns the manifest entry."""
    arrays = {"ids": table.ids, "csls": table.csls, "softmax": table.softmax}
    write_table(directory, FILE, arrays, FORMAT_VERSION)
    entry = {"k": table.k, "chunks": len(table), "questions": table.questions, "format": FORMAT_VERSION}
    return {MANIFEST_KEY: entry | {"seconds": round(seconds, 3), "embedded": embedded}}


def load(directory: Path, manifest: dict[str, Any]) -> QuestionRadii | None:
    """The version's radii; None when its manifest names none (built before it, or none made). A
    table the manifest names that is missing or unreadable is a CorruptIndexError."""
    entry = manifest.get(MANIFEST_KEY)
    if not isinstance(entry, dict):
        return None
    data = read_table(directory, FILE, "question bank table", ("ids", "csls", "softmax"), FORMAT_VERSION)
    if data is None:
        return None
    ids, csls, soft = data["ids"], data["csls"], data["softmax"]
    if not (len(ids) == len(csls) == len(soft)):
        path = Path(directory) / FILE
        raise CorruptIndexError(f"the question bank table {path} does not match its manifest entry")
    return QuestionRadii(ids, csls, soft, int(entry.get("k", 0)), int(entry.get("questions", 0)))


def for_build(
    index: Any,
    dense: Any,
    store: Any,
    embedder: Embedder,
    docs: Callable[[], Iterable[tuple[str, int | None]]],
    chunks: Callable[[np.ndarray], list[Chunk]],
) -> tuple[QuestionRadii | None, float, int]:
    """The radii a build writes (None for an empty index, past ``index.hubness_max_chunks``, or a
    ``question_bank_size`` of 0), the seconds they took and the questions newly embedded.
    ``docs``: the definitions' (doc, chunk id); ``chunks``: the store's chunks by id."""
    if len(dense) == 0 or len(dense) > index.hubness_max_chunks or index.question_bank_size <= 0:
        return None, 0.0, 0
    start = time.perf_counter()
    ids = np.sort(np.asarray(dense.ids(), dtype=np.int64))
    bank = bank_texts(docs(), chunks(ids), index.question_bank_size)
    vectors, embedded = embed_bank(store, embedder, bank)
    sources = np.array([q.chunk_id for q in bank], dtype=np.int64)
    table = measure(ids, chunk_vectors(dense, ids), vectors, sources, index.hubness_k)
    return table, time.perf_counter() - start, embedded


NO_TABLE = (
    "question_hubness: this index version has no question bank (index.question_bank_size is 0, the "
    "default; built before it; or more chunks than index.hubness_max_chunks): dense ranks by cosine; "
    "set index.question_bank_size (2000 was measured) and `hybrid-rag rebuild` writes one"
)


def corrected(live: LiveIndex, on: bool, form: str, tracer: Tracer) -> LiveIndex:
    """``live`` with its dense index scoring ``2 cos(q, x) - r_x`` by the bank's radius ``form`` when
    ``on`` (``features.question_hubness``) and the version has a bank; without one, ``live`` as it is
    and a note in the trace. Over ``features.hubness`` it corrects the already corrected scores."""
    table = getattr(live, "questions", None) if on else None
    return with_radii(live, None if table is None else table.radii(form), on, NO_TABLE, tracer)
