"""Near-duplicate chunks: MinHash signatures over word shingles, matched with MinHash LSH.

A chunk is a set of word shingles: its lower-cased ``\\w+`` tokens taken ``shingle_words`` at a
time (a text with fewer tokens than that is the set of its tokens; a text with no word token at
all, such as a line of punctuation, is only ever an exact duplicate). Two chunks are near
duplicates when the Jaccard similarity of their shingle sets, estimated from ``num_perm``
MinHash values, is at least ``threshold``. ``datasketch`` supplies the MinHash permutations and
the LSH index; shingles are hashed here with numpy (a stable 64-bit hash per distinct token,
combined per shingle), faster than datasketch hashing each shingle string.

The trade-off. Changing a fraction p of the words kills up to ``shingle_words`` shingles per
change, so the Jaccard similarity falls fast, about (1-p)^w / (2 - (1-p)^w). The default (5-word
shingles, 0.9) drops copies that differ in case, punctuation, whitespace or about one word in a
hundred, and keeps lightly edited versions apart; lower the threshold or the shingle size to
merge those too. What each setting catches and costs: benchmarks/RESULTS.md#near-duplicates.

Determinism: the permutations come from a fixed seed, LSH candidates are verified by their
estimated Jaccard, and among several matches the most similar, then the earliest kept, wins.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from hybrid_rag.errors import ConfigError
from hybrid_rag.settings import DedupeSettings

if TYPE_CHECKING:  # datasketch loads on first use: only an ingest needs it
    from datasketch import MinHash, MinHashLSH

SEED = 1  # the MinHash permutations: fixed, so signatures are equal across runs and machines
# LSH band parameters are chosen to weigh a missed near duplicate nine times a spurious
# candidate: candidates are verified by their estimated Jaccard, so a spurious one costs one
# comparison, while a missed one is a duplicate stored. At threshold 0.9 and 128 permutations
# this gives 8 bands of 16 rows (the probabilities: RESULTS.md#near-duplicates).
LSH_WEIGHTS = (0.1, 0.9)  # (false positive, false negative)
_TOKEN_RE = re.compile(r"\w+")
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant (golden ratio) for combining token hashes
_LOW32 = np.uint64(0xFFFFFFFF)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens: ``tokens("Foo-bar, BAZ_1") == ["foo", "bar", "baz_1"]``."""
    return _TOKEN_RE.findall(text.lower())


def shingles(text: str, size: int) -> set[str]:
    """The word shingles of ``text`` as strings (the reference for :func:`combine_shingles`)."""
    words = tokens(text)
    if len(words) < size:
        return set(words)
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


def token_hash(token: str) -> int:
    """A stable 64-bit hash of one token (blake2b; Python's ``hash`` changes per process)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")


def combine_shingles(token_hashes: np.ndarray, size: int) -> np.ndarray:
    """32-bit hashes of every run of ``size`` consecutive token hashes, sorted and unique.

    With fewer than ``size`` tokens, the hashes of the tokens themselves (the whole-set rule).
    """
    h = np.asarray(token_hashes, dtype=np.uint64)
    n = len(h) - size + 1
    if n <= 0:
        acc = h.copy()
    else:
        acc = h[:n].copy()
        for j in range(1, size):
            acc = acc * _MIX + h[j : j + n]  # uint64 arithmetic wraps: a polynomial hash mod 2^64
    return np.unique((acc ^ (acc >> np.uint64(32))) & _LOW32).astype(np.uint32)


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer (a bijection that spreads bits), element-wise on uint32."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


@lru_cache(maxsize=16)
def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) for ``threshold`` with ``LSH_WEIGHTS`` (datasketch's optimisation, cached: it
    integrates the error curves for every split of ``num_perm``, a tenth of a second each time).

    At thresholds near 1 the optimum is a single band, which datasketch refuses; two bands of
    ``num_perm // 2`` rows then still make every identical signature a candidate.
    """
    from datasketch import MinHashLSH

    try:
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=LSH_WEIGHTS)
    except ValueError:
        return 2, num_perm // 2
    return lsh.b, lsh.r


class NearDuplicateFilter:
    """Finds the chunks of a batch that repeat, exactly or nearly, an earlier or existing chunk.

    >>> f = NearDuplicateFilter(DedupeSettings())
    >>> f.find_duplicates([("s1", "Hello, world!"), ("s2", "hello world")])
    {'s2': 's1'}
    """

    def __init__(self, settings: DedupeSettings) -> None:
        if settings.num_perm < 2:
            raise ConfigError(f"dedupe.num_perm must be at least 2 for LSH, got {settings.num_perm}")
        self.settings = settings
        self._token_hashes: dict[str, int] = {}
        self._template: MinHash | None = None

    def signature(self, text: str) -> MinHash | None:
        """The MinHash of a text's shingle set; ``None`` when it has no word token."""
        words = tokens(text)
        if not words:
            return None
        cache = self._token_hashes
        for word in set(words).difference(cache):
            cache[word] = token_hash(word)
        hashes = np.fromiter(map(cache.__getitem__, words), dtype=np.uint64, count=len(words))
        return self.minhash(combine_shingles(hashes, self.settings.shingle_words))

    def minhash(self, values: np.ndarray) -> MinHash:
        """A datasketch MinHash (scheme affine32) of 32-bit hash values, computed in one numpy pass.

        Equal to ``MinHash(num_perm, seed=SEED, hashfunc=int).update_batch(values)`` (a test
        holds it to that), without its per-value Python loop.
        """
        from datasketch import MinHash

        if self._template is None:
            self._template = MinHash(
                num_perm=self.settings.num_perm, seed=SEED, scheme="affine32", hashfunc=int
            )
        template = self._template
        a, b = template.permutations
        mixed = fmix32(np.asarray(values, dtype=np.uint32))[:, None]
        m = template.copy()
        if len(mixed):
            m.hashvalues = np.minimum(template.hashvalues, (mixed * a + b).min(axis=0))
        return m

    def from_hashvalues(self, values: np.ndarray) -> MinHash:
        """A signature back from ``MinHash.hashvalues`` (as the store caches them)."""
        if self._template is None:
            self.minhash(np.zeros(0, dtype=np.uint32))
        assert self._template is not None
        from datasketch import MinHash

        return MinHash(
            num_perm=self.settings.num_perm,
            seed=SEED,
            scheme="affine32",
            hashfunc=int,
            hashvalues=np.asarray(values, dtype=np.uint64),
            permutations=self._template.permutations,
        )

    def find_duplicates(
        self,
        new: Sequence[tuple[str, str | MinHash | None]],
        existing: Iterable[tuple[str, str | MinHash | None]] = (),
    ) -> dict[str, str]:
        """Map each dropped new chunk's sha256 to the sha256 of the kept chunk it duplicates.

        ``new`` and ``existing`` are (sha256, text) pairs; a chunk may come with its signature
        (a MinHash, or None for a text without words) instead of its text, so that a caller that
        caches signatures never hashes a text twice. The first occurrence is kept: existing
        chunks first, then new ones in order. A new chunk whose sha256 is an existing one maps to
        itself. A sha256 repeated within ``new`` is one chunk, decided at its first occurrence.
        With ``enabled`` false nothing is dropped (``{}``).
        """
        if not self.settings.enabled:
            return {}
        index = DuplicateIndex(self)
        for sha, text in existing:
            index.add_existing(sha, self.signature(text) if isinstance(text, str) else text)
        result: dict[str, str] = {}
        seen: set[str] = set()
        for sha, text in new:
            if index.is_existing(sha):
                result[sha] = sha
                continue
            if sha in seen:
                continue
            seen.add(sha)
            match = index.check(sha, self.signature(text) if isinstance(text, str) else text)
            if match is not None:
                result[sha] = match
        return result

    def _best_match(
        self, m: MinHash, lsh: MinHashLSH, kept: dict[str, MinHash | None], order: dict[str, int]
    ) -> str | None:
        """The most similar kept chunk at or above the threshold (earliest on a tie), if any."""
        best: tuple[float, int, str] | None = None
        for candidate in lsh.query(m):
            other = kept[candidate]
            assert other is not None  # only chunks with a signature are in the LSH index
            similarity = m.jaccard(other)
            if similarity >= self.settings.threshold:
                key = (-similarity, order[candidate], candidate)
                if best is None or key < best:
                    best = key
        return None if best is None else best[2]


class DuplicateIndex:
    """The chunks kept so far (existing ones first, then new ones in the order they are checked),
    for an ingest that checks its chunks a batch at a time: a chunk checked in a later batch is
    compared with every chunk kept before it, exactly as :meth:`NearDuplicateFilter.find_duplicates`
    compares a whole list.

    >>> index = DuplicateIndex(NearDuplicateFilter(DedupeSettings()))
    >>> index.check("s1", index.finder.signature("Hello, world!")) is None
    True
    >>> index.check("s2", index.finder.signature("hello world"))
    's1'
    """

    def __init__(self, finder: NearDuplicateFilter) -> None:
        self.finder = finder
        cfg = finder.settings
        from datasketch import MinHashLSH

        self._lsh = MinHashLSH(num_perm=cfg.num_perm, params=lsh_params(cfg.threshold, cfg.num_perm))
        self._kept: dict[str, MinHash | None] = {}
        self._order: dict[str, int] = {}  # kept sha -> rank in keeping order, to break ties
        self._existing: set[str] = set()
        self._dropped: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def is_existing(self, sha: str) -> bool:
        return sha in self._existing

    def add_existing(self, sha: str, signature: MinHash | None) -> None:
        """Keep a chunk of the store that this ingest leaves alone."""
        if sha not in self._kept:
            self._keep(sha, signature)
            self._existing.add(sha)

    def check(self, sha: str, signature: MinHash | None) -> str | None:
        """The sha256 of the kept chunk this one repeats (its own when it was kept before), or
        None, and then it is kept: the first occurrence wins, the most similar match is chosen."""
        if sha in self._kept:
            return sha
        if sha in self._dropped:
            return self._dropped[sha]
        match = None
        if signature is not None:
            match = self.finder._best_match(signature, self._lsh, self._kept, self._order)
        if match is None:
            self._keep(sha, signature)
        else:
            self._dropped[sha] = match
        return match

    def _keep(self, sha: str, signature: MinHash | None) -> None:
        self._kept[sha] = signature
        self._order[sha] = len(self._order)
        if signature is not None:
            self._lsh.insert(sha, signature, check_duplication=False)
