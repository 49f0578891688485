"""Topic summaries: extractive (offline), or map-reduce through a Generator.

* **Extractive**: drawn from the topic's own quotes, never from lines it does not quote: the
  whole units (sentences, code lines) inside its quoted windows, prose sentences and code
  signatures alike (other code lines only when the quotes hold neither), those that match the
  question best (the evidence relevance that chose the quotes; at least ``RELEVANT_SHARE`` of the
  best one's, so that an unrelated quote of the same topic is not mixed in), at most
  ``summary_sentences`` of them, in relevance order; code in backticks. It is written as the
  budget is filled (``from_quotes``): a summary says what the quotes below it say.
* **Map-reduce**: map = one short summary per member chunk (the topic's best
  ``summary_map_chunks``, in rank order); reduce = one call that combines a topic's partial
  summaries (skipped when there is one). A topic whose map or reduce fails gets its extractive
  summary, and so do the topics after it: the generator is not asked again in the same build (a
  server that is down would cost a timeout a call). The note says so.

Either way a summary is at most ``summary_max_tokens`` tokens, cut between words with `` …``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

import hybrid_rag.context.evidence as ev
from hybrid_rag.errors import describe
from hybrid_rag.protocols import Generator
from hybrid_rag.settings import ContextSettings
from hybrid_rag.types import ScoredChunk

RELEVANT_SHARE = 0.5  # a summary's units match the question at least this share of its best unit
_TEST_SIGNATURE = re.compile(r"^\s*(?:async\s+)?def\s+test")
SYSTEM = "You summarise retrieved passages for a search engine. Reply with one or two plain sentences."
MAP_PROMPT = (
    "Question: {query}\n\nPassage [{ref}]:\n{passage}\n\n"
    "In one sentence, say what this passage contains that bears on the question."
)
REDUCE_PROMPT = (
    "Question: {query}\n\nSummaries of passages on one topic:\n{partials}\n\n"
    "Combine them into one or two sentences about what this topic contains that bears on the question."
)


def extractive(units: Sequence[ev.Unit], ranked: Sequence[int], code: Sequence[bool], n: int) -> str:
    """The first ``n`` distinct texts of ``units[ranked]``: code (``code[chunk]``) in backticks
    and followed by ``;``, sentences as they are.

    >>> u = [ev.Unit(0, 0, 0, "def load(path):", True), ev.Unit(1, 0, 0, "Loads a file.")]
    >>> extractive(u, [0, 1], [True, False], 2)
    '`def load(path)`; Loads a file.'
    """
    picked: dict[str, bool] = {}
    for j in ranked:
        picked.setdefault(units[j].text, code[units[j].chunk])
        if len(picked) == n:
            break
    out = ""
    after_code = False
    for text, is_code in picked.items():
        if out:
            out += "; " if after_code else " "
        out += f"`{text.rstrip(':{ ')}`" if is_code else text
        after_code = is_code
    return out


def candidates(
    units: Sequence[ev.Unit], pool: Sequence[int], code: Sequence[bool], *, tests: bool = True
) -> list[int]:
    """The units of ``pool`` a summary may use: prose sentences and code signatures; every code
    line only when the pool has neither. ``tests=False`` (``context.heading_tests``): a test
    function's signature (``def test_...``) only when the pool has no other: a topic's heading
    names what it is about, not the test that exercises it."""
    chosen = [j for j in pool if units[j].signature or not code[units[j].chunk]]
    if not tests:
        chosen = [j for j in chosen if not _TEST_SIGNATURE.match(units[j].text)] or chosen
    return chosen or list(pool)


def map_reduce(
    generator: Generator,
    query: str,
    passages: Sequence[tuple[str, str]],
    max_tokens: int,
    cut: Callable[[str], str],
) -> str:
    """One summary of ``passages`` (``(ref, text)`` pairs): one call a passage, then one to combine
    them (none for a single passage). Any failure, or an empty reply, raises."""

    def ask(prompt: str) -> str:
        text = " ".join(str(generator.generate(prompt, system=SYSTEM, max_tokens=max_tokens)).split())
        if not text:
            raise ValueError("empty summary")
        return text

    partials = [ask(MAP_PROMPT.format(query=query, ref=ref, passage=text)) for ref, text in passages]
    if len(partials) == 1:
        return partials[0]
    listed = "\n".join(f"- {cut(p)}" for p in partials)
    return ask(REDUCE_PROMPT.format(query=query, partials=listed))


@dataclass(frozen=True)
class Summaries:
    """Each topic's summary, why generated summaries were replaced ("" when none was), and the
    seconds spent in the generator."""

    texts: dict[int, str] = field(default_factory=dict)
    note: str = ""
    seconds: float = 0.0


class Summarizer:
    """Writes the topics' summaries (module docstring); ``count`` counts a text's tokens."""

    def __init__(
        self, cfg: ContextSettings, generator: Generator | None, count: Callable[[str], int]
    ) -> None:
        self.cfg = cfg
        self.generator = generator
        self.count = count

    def summarize(self, query: str, chunks: Sequence[ScoredChunk], labels: np.ndarray) -> Summaries:
        """The generated summary of each topic a generator wrote (topics are ``labels``); the
        others are extractive, written from the quotes by ``from_quotes``."""
        topics = sorted(set(labels.tolist()))
        start = time.perf_counter()
        generated, note = self.generated(query, chunks, labels, topics)
        seconds = time.perf_counter() - start if self.generator is not None else 0.0
        texts = {t: self.cut(generated[t]) for t in topics if t in generated}
        return Summaries(texts, note, seconds)

    def from_quotes(
        self,
        topic: int,
        windows: Mapping[int, tuple[int, int]],
        units: Sequence[ev.Unit],
        relevance: Sequence[float],
        code: Sequence[bool],
        labels: Sequence[int],
    ) -> str:
        """Topic ``topic``'s extractive summary from its quoted ``windows`` (chunk index -> its
        quoted lines, inclusive): module docstring. "" when it quotes no whole unit."""
        inside = [
            j
            for j, u in enumerate(units)
            if labels[u.chunk] == topic
            and u.chunk in windows
            and not u.heading
            and windows[u.chunk][0] <= u.first
            and u.last <= windows[u.chunk][1]
        ]
        pool = candidates(units, inside, code, tests=self.cfg.heading_tests)
        if not pool:
            return ""
        floor = RELEVANT_SHARE * max(relevance[j] for j in pool)
        ranked = sorted((j for j in pool if relevance[j] >= floor), key=lambda j: (-relevance[j], j))
        return self.cut(extractive(units, ranked, code, self.cfg.summary_sentences))

    def generated(
        self, query: str, chunks: Sequence[ScoredChunk], labels: np.ndarray, topics: Sequence[int]
    ) -> tuple[dict[int, str], str]:
        """Map-reduce summaries of ``topics`` until the generator first fails, and a note naming
        the failure and how many topics fell back to extractive summaries ("" when none did)."""
        out: dict[int, str] = {}
        if self.generator is None:
            return out, ""
        for t in topics:
            members = np.flatnonzero(labels == t)[: self.cfg.summary_map_chunks]
            passages = [(chunks[i].citation, chunks[i].text) for i in members]
            try:
                out[t] = map_reduce(self.generator, query, passages, self.cfg.summary_max_tokens, self.cut)
            except Exception as exc:  # any generator failure degrades, it never breaks the context
                return out, (
                    f"summary generator failed ({describe(exc)}); "
                    f"extractive summaries used for {len(topics) - len(out)} of {len(topics)} topic(s)"
                )
        return out, ""

    def cut(self, text: str) -> str:
        """At most ``summary_max_tokens`` tokens, cut between words with an ellipsis."""
        limit = self.cfg.summary_max_tokens
        if self.count(text) <= limit:
            return text
        words = text.split(" ")
        lo, hi = 0, len(words)
        while lo < hi:  # the most words that fit with the ellipsis
            mid = (lo + hi + 1) // 2
            if self.count(" ".join(words[:mid]) + " …") <= limit:
                lo = mid
            else:
                hi = mid - 1
        return (" ".join(words[:lo]) + " …") if lo else ""
