"""Doc comments and definitions of brace languages (Rust, Go, Java, JavaScript/TypeScript, C, C++),
found without the engine's own parsers so the benchmark's judgements do not share its mistakes.

A definition is a line that opens a function (or, for :func:`definitions`, a type) by the
language's pattern below, whose body is the first ``{`` after it and ends at the matching ``}``
(strings, characters and comments skipped). Its doc comment is the block just above it (blank
lines, attributes and annotations may sit between): ``///`` lines, a ``/** ... */`` block, or for Go
the ``//`` lines. A definition whose body cannot be matched (a declaration, a macro) is skipped.

    >>> [d.name for d in scan("/// Adds one.\\nfn inc(x: u8) -> u8 { x + 1 }\\n", ".rs")]
    ['inc']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MIN_WORDS = 5  # as Python's docstrings (``_repo_corpus.MIN_WORDS``)

LANGUAGES = {
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".c": "c",
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cxx": "cpp",
}
_WORDS = "if for while switch return sizeof catch else new do case throw typeof delete await yield super"
KEYWORDS = frozenset(
    (_WORDS + " this match loop defined elif assert static_assert decltype alignof using").split()
)
_FN = {
    "rust": r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
    r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+(?P<name>\w+)",
    "go": r"^func\s+(?:\((?P<recv>[^)]*)\)\s*)?(?P<name>\w+)\s*[\[(]",
    "java": r"^(?!\s*(?:new|throw|return)\b)\s*(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|protected|private|static|final|abstract|synchronized|native|default|strictfp)\s+)*(?:<[^>]+>\s+)?(?:[\w.$]+(?:<[^;{}()]*>)?(?:\[\])*\s+)?"
    r"(?P<name>[A-Za-z_$][\w$]*)\s*\(",
    "javascript": r"^\s*(?:export\s+)?(?:default\s+)?(?:(?:async|static|get|set|public|private|protected|"
    r"readonly|override|abstract)\s+)*(?:function\s*\*?\s*)?(?P<name>[A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\(",
    "c": r"^(?!\s*(?:#|return\b|else\b|case\b|new\b|throw\b|delete\b))[\w\s:*&<>,~\[\]]*?"
    r"(?P<name>[A-Za-z_~][\w:~]*)\s*\(",
}
_FN["typescript"] = _FN["javascript"]
_FN["cpp"] = _FN["c"]
_ASSIGNED_FN = re.compile(
    r"^\s*(?:export\s+)?(?:const|let|var)?\s*(?P<name>[\w$.]+)\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>)"
)
_TYPE = {
    "rust": r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?P<kind>struct|enum|trait|union)\s+(?P<name>\w+)",
    "go": r"^type\s+(?P<name>\w+)\s+(?P<kind>struct|interface)\b",
    "java": r"^\s*(?:(?:public|protected|private|static|final|abstract|sealed)\s+)*"
    r"(?P<kind>class|interface|enum|record)\s+(?P<name>\w+)",
    "javascript": r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?"
    r"(?P<kind>class|interface)\s+(?P<name>\w+)",
    "c": r"^\s*(?:template\s*<.*>\s*)?(?:typedef\s+)?(?P<kind>struct|class|union)\s+(?:FMT_\w+\s+)?"
    r"(?P<name>\w+)(?:\s+final)?\s*(?::[^;{]*)?\{?\s*$",
}
_TYPE["typescript"] = _TYPE["javascript"]
_TYPE["cpp"] = _TYPE["c"]
_PREFIX = re.compile(
    r"^\s*(?:#\[|@[A-Za-z]|template\s*<|#\s*if|FMT_\w+\s*$)"
)  # attributes between doc and def


@dataclass(frozen=True)
class Definition:
    """One definition: its name (``Owner.name`` for a method when the owner is known), kind, lines
    (1-based, inclusive; ``start`` is its first non-comment line), and its doc comment's lines."""

    name: str
    kind: str  # "function" or a type keyword
    start: int
    end: int
    doc: tuple[int, int] | None  # (first, last) line of its doc comment
    doc_text: str


def language_of(path: str) -> str | None:
    if path.endswith(".d.ts"):
        return None
    return LANGUAGES.get("." + path.rsplit(".", 1)[-1].lower()) if "." in path else None


def _mask(text: str, language: str) -> str:
    """``text`` with every comment, string and character literal's contents blanked (newlines kept),
    so braces are counted on code alone."""
    out = list(text)
    i, n = 0, len(text)
    quotes = "\"'`" if language in {"javascript", "typescript", "go"} else "\"'"
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in quotes:
            if c == "'" and language == "rust" and not re.match(r"'(?:\\.[^']*|[^\\'])'", text[i : i + 12]):
                i += 1  # a lifetime, not a character
                continue
            j = i + 1
            while j < n and text[j] != c and (c == "`" or text[j] != "\n"):
                raw = c == "`" and language == "go"  # Go's raw strings have no escapes
                j += 2 if text[j] == "\\" and not raw else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _body_end(masked_lines: list[str], start: int) -> int | None:
    """The 0-based line of the ``}`` closing the first ``{`` at or after line ``start`` (None when a
    ``;`` ends the definition first, or nothing closes)."""
    depth, opened = 0, False
    paren = 0
    for i in range(start, min(len(masked_lines), start + 3000)):
        for ch in masked_lines[i]:
            if ch in "([":
                paren += 1
            elif ch in ")]":
                paren -= 1
            elif ch == ";" and not opened and paren <= 0:
                return None
            elif not opened and paren > 0:
                continue  # a brace inside the parameters (a default value, a struct type)
            elif ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return i
        if not opened and i - start > 12:
            return None
    return None


def _doc_above(lines: list[str], at: int, language: str) -> tuple[int, int, str] | None:
    """The doc comment ending just above line ``at`` (0-based): (first, last, text)."""
    i = at - 1
    while i >= 0 and (not lines[i].strip() or _PREFIX.match(lines[i])):
        if not lines[i].strip() and at - i > 2:
            return None
        i -= 1
    if i < 0:
        return None
    last = lines[i].strip()
    if last.endswith("*/") and not last.startswith("//"):
        j = i
        while j >= 0 and "/*" not in lines[j]:
            j -= 1
        if j < 0 or ("/**" not in lines[j] and not (language == "c" and "/*" in lines[j])):
            return None
        if lines[j].split("/*", 1)[0].strip():
            return None
        body = "\n".join(lines[j : i + 1])
        body = re.sub(r"^\s*/\*\*?|\*/\s*$", "", body.strip())
        text = "\n".join(re.sub(r"^\s*\*? ?", "", line) for line in body.splitlines())
        return j, i, text
    marker = "//" if language == "go" else "///"
    if last.startswith(marker) and not last.startswith("//!") and not last.startswith("////"):
        j = i
        while (
            j - 1 >= 0
            and lines[j - 1].strip().startswith(marker)
            and not lines[j - 1].strip().startswith("//!")
        ):
            j -= 1
        text = "\n".join(lines[k].strip()[len(marker) :].strip() for k in range(j, i + 1))
        return j, i, text
    return None


def scan(source: str, suffix: str, types: bool = False) -> list[Definition]:
    """Every function (and with ``types`` every struct, class, trait, interface) of ``source`` whose
    body can be matched, in source order."""
    language = LANGUAGES.get(suffix)
    if language is None:
        return []
    lines = source.splitlines()
    masked = _mask(source, language).splitlines()
    fn, ty = re.compile(_FN[language]), re.compile(_TYPE[language])
    out: list[Definition] = []
    owners: list[tuple[str, int]] = []  # (type name, its last line)
    for i, line in enumerate(masked):
        owners = [o for o in owners if o[1] >= i]
        if not line.strip() or line.lstrip().startswith(("#", "}", "template")):
            continue
        kind, name = "", ""
        if m := ty.match(line):
            kind, name = m.group("kind"), m.group("name")
        elif (m := fn.match(line)) or (
            m := _ASSIGNED_FN.match(line) if language in {"javascript", "typescript"} else None
        ):
            kind, name = "function", m.group("name")
            if name.split("::")[-1].split(".")[-1] in KEYWORDS:
                continue
        if not kind or name in KEYWORDS:
            continue
        end = _body_end(masked, i)
        if end is None:
            continue
        qualified = name
        if language == "go" and m and m.groupdict().get("recv"):
            qualified = f"{m.group('recv').split()[-1].lstrip('*').split('[')[0]}.{name}"
        elif kind == "function" and owners and "." not in name and "::" not in name:
            qualified = f"{owners[-1][0]}.{name}"
        doc = _doc_above(lines, i, language)
        out.append(
            Definition(
                qualified,
                kind,
                i + 1,
                end + 1,
                (doc[0] + 1, doc[1] + 1) if doc else None,
                doc[2] if doc else "",
            )
        )
        if kind != "function":
            owners.append((name, end))
    if language == "rust":  # methods of `impl Type` blocks take the type's name
        impls = [
            (m.group(1), i, _body_end(masked, i))
            for i, line in enumerate(masked)
            if (m := re.match(r"^\s*(?:unsafe\s+)?impl(?:<[^{]*?>)?\s+(?:[\w:<>, ]+\s+for\s+)?(\w+)", line))
        ]
        out = [d if "." in d.name else _owned(d, impls) for d in out]
    return [d for d in out if types or d.kind == "function"]


def _owned(d: Definition, impls: list[tuple[str, int, int | None]]) -> Definition:
    inner = [name for name, a, b in impls if b is not None and a + 1 < d.start <= b + 1]
    if not inner or d.kind != "function":
        return d
    return Definition(f"{inner[-1]}.{d.name}", d.kind, d.start, d.end, d.doc, d.doc_text)


def doc_sentence(text: str, name: str, language: str) -> str:
    """A doc comment's first sentence as a question: tags, markup and (Go) the leading name dropped."""
    keep = []
    for line in text.splitlines():
        if re.match(r"^\s*[@\\](?!rst|endrst)\w", line) or line.strip().startswith("```"):
            break
        keep.append(line)
    body = "\n".join(keep)
    body = re.sub(r"\\(?:rst|endrst)\b", "", body)
    body = re.sub(r"\{@\w+\s+([^}]*)\}", r"\1", body)  # {@link Foo} -> Foo
    body = re.sub(r"<[^>]+>", " ", body)  # <p>, <code>
    body = re.sub(r"\[`?([^\]`]+)`?\]\([^)]*\)", r"\1", body)  # [text](link)
    body = re.sub(r"\[`([^\]`]+)`\]", r"\1", body)  # [`Foo`]
    paragraph = body.strip().split("\n\n", 1)[0]
    sentence = " ".join(paragraph.split())
    m = re.search(r"(?<=[.!?])\s", sentence)
    sentence = (sentence[: m.start()] if m else sentence).strip()
    short = name.split(".")[-1].split("::")[-1]
    words = sentence.split(" ", 1)
    if language == "go" and len(words) == 2 and words[0].strip("`") == short:
        sentence = words[1][:1].upper() + words[1][1:]
    return sentence


def _family(language: str) -> set[str]:
    return {"cpp", "c"} if language in {"cpp", "c"} else {language}


def doc_candidates(root: Path, language: str) -> list[tuple[str, str, int, str]]:
    """(relative path, name, index among the file's functions, its doc comment's first sentence) of
    every function of ``language`` under ``root`` with a sentence of ``MIN_WORDS`` words, outside
    test files and not named test*, sorted (``_repo_corpus.candidates`` for Python)."""
    from studies._repo_corpus import is_test_path

    family = _family(language)
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or language_of(rel) not in family or is_test_path(rel):
            continue
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for index, d in enumerate(scan(source, path.suffix.lower())):
            short = d.name.rsplit(".", 1)[-1]
            if short.lower().startswith("test") or d.doc is None:
                continue
            sentence = doc_sentence(d.doc_text, d.name, language)
            if len(sentence.split()) >= MIN_WORDS:
                out.append((rel, d.name, index, sentence))
    return out


def strip_doc_comments(suffix: str) -> Callable[[str, set[int]], tuple[str, dict[int, tuple[int, int]]]]:
    """A ``strip(source, indices)`` for files ending in ``suffix``: the doc comments of the functions
    at ``indices`` removed, and each such function's (first, last) line in the rewritten text."""

    def strip(source: str, indices: set[int]) -> tuple[str, dict[int, tuple[int, int]]]:
        found = scan(source, suffix)
        lines = source.splitlines(keepends=True)
        for index in sorted(indices, key=lambda i: -found[i].start):
            first, last = found[index].doc or (0, -1)
            del lines[first - 1 : last]
        rewritten = "".join(lines)
        again = scan(rewritten, suffix)
        assert len(again) == len(found), "removing doc comments changed the definitions found"
        return rewritten, {i: (again[i].start, again[i].end) for i in indices}

    return strip
