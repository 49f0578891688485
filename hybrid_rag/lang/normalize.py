"""Unicode normalisation of BM25 text: the same word matches however it is encoded.

Documents and questions alike (``lang/tokenize.py`` runs every text through here before it
tokenises): characters that are invisible inside a word are removed (soft hyphen U+00AD, zero-width
space, non-joiner and joiner, word joiner, BOM), then the text is NFKC-normalised (NFD accents
composed, fullwidth letters and digits, ligatures such as "ﬁ", compatibility forms). Each word is
then case-folded (``str.casefold``: ß = ss, final sigma = sigma), with Turkish and Azerbaijani's
dotted and dotless I in a word that is not all ASCII (``İ`` -> ``i``, ``IŞIK`` -> ``ışık``); in
other languages ``İ`` folds to plain ``i``. ASCII text is returned as it is and ASCII words are
lowercased as before (``IP`` in Turkish text stays ``ip``), so the terms of ASCII text are unchanged.

>>> fold_word(normalize_text("Ｐａｓｓ\\u00adword"))
'password'
>>> fold_word("İSTANBUL", "tr"), fold_word("İstanbul"), fold_word("IŞIK", "tr")
('istanbul', 'istanbul', 'ışık')
"""

from __future__ import annotations

import re
import unicodedata

_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_DOTTED_I = "i\u0307"  # "İ".lower() and .casefold(): i + combining dot above
TURKIC = ("tr", "az")


def normalize_text(text: str) -> str:
    """``text`` without in-word invisible characters, NFKC-normalised (ASCII: as it is)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))


def fold_word(word: str, lang: str | None = None) -> str:
    """``word`` case-folded for matching, Turkish I's by ``lang`` (ASCII: lowercased)."""
    if word.isascii():  # "IP", "WING" in Turkish text stay ip, wing: the terms of ASCII are as before
        return word.lower()
    if lang in TURKIC:
        word = word.replace("I", "ı").replace("İ", "i")
    folded = word.casefold()
    if _DOTTED_I in folded:
        folded = folded.replace(_DOTTED_I, "i")
    return folded if folded.isascii() else unicodedata.normalize("NFKC", folded)
