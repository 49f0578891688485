"""Identifiers into words: ``getFileName`` -> ``get, file, name`` (BM25's tokenizer and every
language's analyzer split them the same way)."""

from __future__ import annotations

import re

_NON_ALNUM = re.compile(r"[\W_]+")


def split_identifier(token: str) -> list[str]:
    """Lowercased parts of an identifier, split at ``_``/punctuation, camelCase and digits.

    ``"getFileName"`` -> ``["get", "file", "name"]``; ``"HTTPServer2"`` -> ``["http", "server", "2"]``;
    ``"XMLHttpRequest"`` -> ``["xml", "http", "request"]``; a plain word gives itself. Unicode-aware:
    case is read with ``str.isupper``/``str.islower``, so ``"caféNoir"`` -> ``["café", "noir"]``.
    """
    if token.isascii() and token.isalpha() and token.islower():  # a plain word: itself (most tokens)
        return [token]
    parts: list[str] = []
    for piece in _NON_ALNUM.split(token):
        if piece:
            parts.extend(_split_case(piece))
    return [p.lower() for p in parts]


def _split_case(piece: str) -> list[str]:
    """Split one alphanumeric run at lower->Upper, letter<->digit and ACRONYMWord boundaries."""
    out: list[str] = []
    start = 0
    for i in range(1, len(piece)):
        prev, cur = piece[i - 1], piece[i]
        boundary = (
            (prev.isdigit() != cur.isdigit())
            or (not prev.isupper() and not prev.isdigit() and cur.isupper())
            or (prev.isupper() and cur.isupper() and i + 1 < len(piece) and piece[i + 1].islower())
        )
        if boundary:
            out.append(piece[start:i])
            start = i
    out.append(piece[start:])
    return out
