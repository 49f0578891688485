"""Where a definition starts in text that has no parse: the definition finder's line rules.

* ``heuristic_cuts``, the column-0 rule: where the chunker cuts a whole code file that no parser
  reads (no grammar for its language, or its parse failed), by lines at column 0;
* ``definition_lines``, the rule for a piece of a file: the definition windows of
  ``embedding.windows: definitions`` ask it at embedding time, when a window sees one chunk's
  text and no file (``definition_windows.py``).

For ``definition_lines``, a definition line is a ``def``/``class``/``function``/``fn`` ...
line; in brace-language text (enough lines ending in ``{ } ;``) also a typed head such as
``public int take()`` or ``int Foo::bar() const``. The decorator lines above it, and in
brace-language text its doc comment, belong to it.
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


_NESTED_WORDS = (
    "def|class|function|func|fn|pub|export|public|private|protected|internal|static|abstract|final|"
    "sealed|async|override|interface|struct|enum|impl|trait|fun|module|namespace|object|sub|proc|"
    "describe|it|test"
)
_DEF_RE = re.compile(
    rf"(?:{_NESTED_WORDS}|type|union|const|let|var|val|package|record|typedef|template|mod)\b"
)
_NESTED_RE = re.compile(rf"(?:{_NESTED_WORDS})\b")  # not const/let/var: those are everywhere in bodies
_SQL_DEF_RE = re.compile(r"(?i)(?:create|alter|drop|insert|update|delete|select|with|begin)\b")
_COMMENT_RE = re.compile(r"(?://|/\*|\*|--|@|#(?:[\s#!\[]|$)|;;|%)")
_CLOSER_RE = re.compile(r"(?:[})\]]|end\b|fi\b|done\b|esac\b|</)")
_KEY_LANGUAGES = frozenset({"yaml", "toml", "ini", "make", "dockerfile"})  # every col-0 line opens a unit


def _blank(line: str) -> bool:
    return not line.strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def pull_up(lines: Sequence[str], i: int, comment: re.Pattern[str] = _COMMENT_RE) -> int:
    """Move a cut at line ``i`` above the comments, decorators and annotations attached to it
    (non-blank lines right above, indented at most one column more than line ``i``)."""
    depth = _indent(lines[i]) + 1
    while i > 0 and not _blank(lines[i - 1]) and _indent(lines[i - 1]) <= depth:
        if not comment.match(lines[i - 1].lstrip()):
            break
        i -= 1
    return i


def heuristic_cuts(lines: Sequence[str], language: str) -> tuple[set[int], set[int]]:
    """(top-level, nested) definition starts for languages without a parser here.

    Top level: a line at column 0 that is not a comment or a closing bracket and either opens
    a definition (``def``, ``func``, ``pub``, ``export``, ...), follows a blank line or a
    closing bracket at column 0, or (YAML, TOML, ...) is any key. Nested: an indented line that
    opens a definition. Both are moved above their attached comments.
    """
    top: set[int] = set()
    nested: set[int] = set()
    every_key = language in _KEY_LANGUAGES
    sql = language == "sql"
    for i, line in enumerate(lines):
        if _blank(line):
            continue
        stripped = line.lstrip()
        if _COMMENT_RE.match(stripped):
            continue
        if line[0] in " \t":
            if _NESTED_RE.match(stripped):
                nested.add(pull_up(lines, i))
            continue
        opens = bool(_DEF_RE.match(stripped) or (sql and _SQL_DEF_RE.match(stripped)))
        if _CLOSER_RE.match(line):
            continue
        prev = lines[i - 1] if i else ""
        if opens or every_key or _blank(prev) or (not prev[0].isspace() and _CLOSER_RE.match(prev)):
            top.add(pull_up(lines, i))
    return top, nested - top
