"""Text for a terminal: control characters from document text and file names neutralised.

A document (or a file name) can hold escape sequences (``ESC [2J`` clears the screen, OSC 8 makes
links, OSC 52 writes the clipboard) and bidi overrides (U+202E shows ``exe.txt`` as ``txt.exe``).
The CLI's plain-text output passes through ``terminal_safe``: C0 and C1 control characters (``\\n``
and ``\\t`` kept), DEL and the bidi embeddings, overrides and isolates (U+202A-U+202E,
U+2066-U+2069) are written as visible escapes (``\\x1b``, ``\\u202e``), so an ESC sequence loses
its ESC and prints as text. ``--json`` output is exact (JSON escapes C0 itself); so is what
``serve`` and ``mcp`` write.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with control characters and bidi overrides written as visible escapes.

    >>> terminal_safe("a\\x1b[2Jb\\tc\\n\\u202etxt.exe")
    'a\\\\x1b[2Jb\\tc\\n\\\\u202etxt.exe'
    """
    return _UNSAFE.sub(_visible, text) if _UNSAFE.search(text) else text


class SafeStream:
    """A text stream whose ``write`` passes through ``terminal_safe``; everything else (flush,
    fileno, isatty, encoding) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        return self.wrapped.write(terminal_safe(text))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
