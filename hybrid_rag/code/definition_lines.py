"""Where a definition starts in text that has no parse: the definition finder's line rule for a
piece of a file (``definitions.definition_lines``), which the definition windows of
``embedding.windows: definitions`` ask at embedding time, when a window sees one chunk's text and
no file (``definition_windows.py``).

A definition line is a ``def``/``class``/``function``/``fn`` ... line; in brace-language text
(enough lines ending in ``{ } ;``) also a typed head such as ``public int take()`` or
``int Foo::bar() const``. The decorator lines above it, and in brace-language text its doc
comment, belong to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# A line that starts a definition: Python, JavaScript/TypeScript, Go, Rust, Ruby, PHP, Kotlin, Swift
_DEFINITION = re.compile(
    r"^[ \t]*(?:(?:export|pub(?:\([^)]*\))?|public|private|protected|static|async|default)[ \t]+)*"
    r"(?:def|class|function|func|fn|impl|trait|interface|struct|enum|module|fun)\b",
    re.MULTILINE,
)
_DECORATOR = re.compile(r"[ \t]*@")
# Brace languages (Java, C, C++, C#, Kotlin, Swift, Scala, Go, Rust, JavaScript, PHP): a function
# or method head with a return type and no keyword, ``public int take() {``, ``int Foo::bar() const``
# or ``std::string name(int id,``. Only looked for in brace-language text (``braces``), where the
# doc comments above a definition (``///``, ``/** ... */``, ``//``) also move with it.
_SIGNATURE = re.compile(
    r"^[ \t]*(?:[A-Za-z_][\w:<>\[\],.?]*[*&]*[ \t]+[*&]*)+~?(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*[ \t]*\("
    r"[^;]*?(?:[{,(]|\)[\w\s:<>&*,.\->]*\{?)[ \t]*$"
)
_NOT_HEAD = frozenset(  # words that open a statement or an expression, never a definition's head
    re.split(
        r"\s+",
        "return if for while switch catch else do new throw throws case sizeof delete using goto await "
        "yield raise assert print elif except with lambda not and or in is del from import typeof "
        "instanceof super this when match",
    )
)
_DOC_COMMENT = re.compile(r"[ \t]*(?://|/\*|\*)")
_BRACE_END = re.compile(r"[{};][ \t]*$")
BRACE_SHARE = 0.2  # of the non-blank lines ending in { } or ; makes a text brace-language code


@dataclass(frozen=True)
class DefinitionLines:
    """The line rule for one piece of text: ``braces`` when it is brace-language code."""

    braces: bool

    def opens(self, line: str) -> bool:
        """Whether ``line`` starts a definition (in brace-language text, a typed function head too)."""
        if _DEFINITION.match(line):
            return True
        if not self.braces or not _SIGNATURE.match(line):
            return False
        head = line.split("(", 1)[0].split()
        return not any(word in _NOT_HEAD for word in head)

    def attached(self, line: str) -> bool:
        """Whether ``line``, right above a definition, belongs to it: a decorator, or in
        brace-language text a doc comment."""
        return bool(_DECORATOR.match(line) or (self.braces and _DOC_COMMENT.match(line)))


def definition_lines(lines: Sequence[str]) -> DefinitionLines:
    """The line rule for the text of ``lines``: brace-language code when enough of its non-blank
    lines end in ``{ } ;``."""
    filled = [line for line in lines if line.strip()]
    ends = sum(1 for line in filled if _BRACE_END.search(line))
    return DefinitionLines(bool(filled) and ends >= BRACE_SHARE * len(filled))
