"""Parent context: the lines around a result, rebuilt from its document's stored chunks.

Two modes (``ParentMode``):

* ``neighbours``: the lines of the chunks at positions ``p - radius .. p + radius`` of the same
  document (from the first one's start line to the last one's end line);
* ``enclosing`` (``definition`` is accepted for it): for a text chunk that starts inside a section,
  the lines from that section's heading (the nearest Markdown heading, ATX or setext, outside
  fenced code, or reStructuredText title above the chunk: the chunker's own heading rule) to the
  chunk's end (``kind="section"``); for a code chunk that starts inside a top-level definition,
  the lines from that definition's first line (a column-0 ``def`` / ``class`` / ``function`` /
  ``fn`` / ``func`` / ``impl`` ..., or an arrow function bound by ``const``, with the decorators
  right above it) to the chunk's end (``kind="definition"``). It is found by walking up from the
  chunk's first line over indented, blank, comment and closing-bracket lines to the first other
  column-0 line; if that line is not a definition the chunk is at module level. A heuristic on
  layout, not a parser: C-style ``int main(void)`` is not recognised. Where there is no enclosing
  section or definition (text before the first heading, module-level code, a chunk that starts at
  its own heading or definition) or it is longer than ``max_lines``, the result gets its
  neighbours instead; ``ParentContext.kind`` says which.

The document's lines are rebuilt from its chunks (chunk text is ``"\\n".join`` of whole lines,
except pieces of an over-long line, which are merged on their overlap). A line no chunk covers is
rendered empty: the chunker never starts or ends a chunk with a blank line, so those are the
blank lines between chunks. A result whose context would be only itself gets no entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from hybrid_rag.ingest.chunking import HEADING, text_priorities
from hybrid_rag.store import MetadataStore
from hybrid_rag.types import Chunk, ParentContext, ParentMode, ScoredChunk, SourceType

DEFAULT_MAX_LINES = 200
_MODIFIERS = (
    r"export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|abstract|final|"
    r"sealed|async|unsafe|extern|inline|override|open|data|suspend|partial"
)
_DEFINITION = re.compile(
    rf"(?:(?:{_MODIFIERS})\s+)*"
    r"(?:def|class|function\*?|func|fn|fun|struct|enum|trait|impl|interface|module|object|record|sub|proc)\b"
    r"|(?:export\s+)?(?:const|let|var)\s+[\w$]+\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|[\w$]+\s*=>)"
)
_DECORATOR = re.compile(r"@[\w.]")
_COMMENT = re.compile(r"(?:#|//|/\*|\*|--|;|%)")
_TRANSPARENT = re.compile(r"(?:@[\w.]|#|//|/\*|\*|--|;|%|[)\]}])")  # decorators, comments, closers


# -- pure functions --------------------------------------------------------------------------


def merge_overlap(left: str, right: str) -> str:
    """``left`` extended by ``right`` where ``right`` starts with a suffix of ``left`` (pieces of one line).

    >>> merge_overlap("abcdef", "defgh")
    'abcdefgh'
    """
    if right in left:
        return left
    for k in range(min(len(left), len(right)), 0, -1):
        if left.endswith(right[:k]):
            return left + right[k:]
    return left + right


def document_lines(chunks: Sequence[Chunk]) -> dict[int, str]:
    """Line number -> text, rebuilt from a document's chunks in position order."""
    lines: dict[int, str] = {}
    for chunk in chunks:
        parts = chunk.text.split("\n")
        if len(parts) == 1 and chunk.start_line == chunk.end_line and chunk.start_line in lines:
            lines[chunk.start_line] = merge_overlap(lines[chunk.start_line], chunk.text)
            continue
        for offset, part in enumerate(parts):
            lines.setdefault(chunk.start_line + offset, part)
    return lines


def render(lines: Mapping[int, str], start: int, end: int) -> str:
    """Lines ``start..end`` joined with newlines; a line not in ``lines`` is empty."""
    return "\n".join(lines.get(i, "") for i in range(start, end + 1))


def definition_start(lines: Mapping[int, str], line: int) -> int | None:
    """First line of the top-level definition that line ``line`` is inside, decorators included.

    Walks up over indented, blank, comment, decorator and closing-bracket lines to the first other
    line at column 0: a definition is the answer, any other statement means module level (None).
    A ``line`` that opens its own definition (possibly after decorators or comments) answers ``line``.
    """
    j = line
    while j in lines and (_DECORATOR.match(lines[j]) or _COMMENT.match(lines[j])):
        j += 1
    if _DEFINITION.match(lines.get(j, "")):
        return line
    for i in range(line, 0, -1):
        text = lines.get(i, "")
        if not text.strip() or text[0].isspace() or _TRANSPARENT.match(text):
            continue
        if not _DEFINITION.match(text):
            return None
        while _DECORATOR.match(lines.get(i - 1, "")):
            i -= 1
        return i
    return None


def section_start(lines: Mapping[int, str], line: int, language: str) -> int | None:
    """First line of the innermost section that line ``line`` is in: the nearest heading at or
    above it, by the chunker's rule for ``language`` (``chunking.text_priorities``); None before
    the first heading.
    """
    rows = [lines.get(i, "") for i in range(1, max(lines, default=0) + 1)]
    priorities = text_priorities(rows, language)
    return next((i + 1 for i in range(min(line, len(rows)) - 1, -1, -1) if priorities[i] == HEADING), None)


def neighbours(chunks: Sequence[Chunk], chunk: Chunk, radius: int) -> list[Chunk]:
    """The chunks of the same document within ``radius`` positions of ``chunk`` (itself included)."""
    return [c for c in chunks if abs(c.position - chunk.position) <= radius]


# -- the stage -------------------------------------------------------------------------------


def attach_parent_context(
    results: Sequence[ScoredChunk],
    store: MetadataStore,
    mode: ParentMode | str = ParentMode.NEIGHBOURS,
    radius: int = 1,
    max_lines: int = DEFAULT_MAX_LINES,
) -> dict[int, ParentContext]:
    """chunk id -> ParentContext for the results that have context beyond themselves.

    Reads each document's chunks once. Results whose chunk is gone from the store get no entry.
    """
    mode = mode if isinstance(mode, ParentMode) else ParentMode.from_str(mode)
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    if max_lines <= 0:
        raise ValueError(f"max_lines must be positive, got {max_lines}")
    by_document: dict[int, tuple[list[Chunk], dict[int, str]]] = {}
    out: dict[int, ParentContext] = {}
    for result in results:
        doc_id = result.chunk.document_id
        if doc_id not in by_document:
            chunks = store.document_chunks(doc_id)
            by_document[doc_id] = (chunks, document_lines(chunks))
        chunks, lines = by_document[doc_id]
        own = next((c for c in chunks if c.id == result.id), None)
        if own is None or own.id in out:
            continue
        context = _context(chunks, lines, own, mode, radius, max_lines)
        if context is not None:
            out[own.id] = context
    return out


def _context(
    chunks: Sequence[Chunk],
    lines: Mapping[int, str],
    own: Chunk,
    mode: ParentMode,
    radius: int,
    max_lines: int,
) -> ParentContext | None:
    if mode is ParentMode.ENCLOSING:
        if own.source_type is SourceType.CODE:
            start, kind = definition_start(lines, own.start_line), "definition"
        else:
            start, kind = section_start(lines, own.start_line, own.language), "section"
        if start is not None and start < own.start_line and own.end_line - start + 1 <= max_lines:
            text = render(lines, start, own.end_line)
            return ParentContext(own.id, own.path, start, own.end_line, text, kind)
    near = neighbours(chunks, own, radius)
    start, end = min(c.start_line for c in near), max(c.end_line for c in near)
    text = render(document_lines(near), start, end)
    if (start, end) == (own.start_line, own.end_line) and text == own.text:
        return None
    return ParentContext(own.id, own.path, start, end, text)
