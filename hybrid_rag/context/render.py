"""What a built context holds (frozen dataclasses) and how it is rendered into a prompt.

The rendered layout, each part optional as the token budget allows::

    # Context
    Question: how are chunks cut?
    Retrieval confidence: 0.71
    Note: 3 of 12 results not quoted: the budget of 3000 tokens is full

    ## Topic 1: Code is cut between top-level definitions. [1][2]
    [1] hybrid_rag/chunking.py:104-131
    ```python
    def python_cuts(lines):
        ...
    ```
    [2] docs/chunking.md:3-5
    > A chunk holds at most max_tokens tokens.

    ## Sources
    [1] hybrid_rag/chunking.py:104-131 (chunk 17)
    [2] docs/chunking.md:3-5 (chunk 4)

Citation ids are numbered by first appearance: topics in order, quotes within a topic in order.
Quoted lines are the file's lines byte for byte (prose after ``> ``, an empty line as ``>``). The
one exception is a piece of an over-long line (``chunking.py`` cuts such a line into pieces): it is
quoted exactly, with ``…`` on the side(s) where the line goes on, and ``fragment`` in ``to_dict``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hybrid_rag.locators import label
from hybrid_rag.types import QueryResult, SourceType, fields_of

_BACKTICKS = re.compile(r"`{3,}")
ELLIPSIS = "…"  # marks the side(s) where a quoted piece of an over-long line was cut


@dataclass(frozen=True)
class Quote:
    """Lines ``start_line..end_line`` of ``path`` (1-based, inclusive), quoted exactly; or, for a
    piece of an over-long line, that exact substring of the line, cut before and/or after it."""

    citation: int
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    text: str
    source_type: SourceType
    language: str
    topic: int  # 1-based topic number
    relevance: float
    cut_before: bool = False  # a piece of an over-long line that does not start the line
    cut_after: bool = False  # ... that does not end it
    locator: Mapping[str, object] = field(default_factory=dict)  # a document's page/slide/cell/row

    @property
    def ref(self) -> str:
        return with_locator(f"{self.path}:{self.start_line}-{self.end_line}", self.locator)

    @property
    def fragment(self) -> bool:
        return self.cut_before or self.cut_after

    def shown_lines(self) -> list[str]:
        """The lines as rendered: exact, with ``…`` where a fragment's line goes on."""
        return mark_cuts(self.text.split("\n"), self.cut_before, self.cut_after)

    def to_dict(self) -> dict[str, object]:
        return {
            **fields_of(self, "citation", "chunk_id", "path", "start_line", "end_line"),
            "source_type": self.source_type.value,
            **fields_of(self, "language", "topic"),
            "relevance": round(self.relevance, 6),
            "fragment": self.fragment,
            **locator_fields(self.locator),
            "text": self.text,
        }


@dataclass(frozen=True)
class Source:
    """One line of the Sources list: a citation id, where its lines are, and the chunk they came from."""

    citation: int
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    locator: Mapping[str, object] = field(default_factory=dict)  # a document's page/slide/cell/row

    @property
    def ref(self) -> str:
        return with_locator(f"{self.path}:{self.start_line}-{self.end_line}", self.locator)

    def to_dict(self) -> dict[str, object]:
        return {
            **fields_of(self, "citation", "chunk_id", "ref", "path", "start_line", "end_line"),
            **locator_fields(self.locator),
        }


@dataclass(frozen=True)
class Topic:
    """A cluster of results: its summary ("" when dropped for the budget), the citation ids of its
    quotes, and the ids of every chunk in it (quoted or not)."""

    number: int
    summary: str
    citations: tuple[int, ...]
    chunk_ids: tuple[int, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "topic": self.number,
            "summary": self.summary,
            "citations": list(self.citations),
            "chunk_ids": list(self.chunk_ids),
        }


@dataclass(frozen=True)
class Context:
    """A cited, budgeted context; ``render()`` is exactly the text whose tokens ``token_count`` counts.

    ``result`` is the QueryResult it was built from, its trace extended with the context's own
    stages and notes (left out of equality and of ``to_dict``, which stay deterministic)."""

    query: str
    clusters: tuple[Topic, ...]
    quotes: tuple[Quote, ...]
    sources: tuple[Source, ...]
    token_count: int
    max_tokens: int
    confidence: float
    weak_evidence: bool
    notes: tuple[str, ...]
    text: str = field(repr=False)
    result: QueryResult = field(repr=False, compare=False)
    needed_tokens: int | None = None  # results retrieved but none quoted: the smallest budget that quotes one
    edges: tuple[str, ...] = ()  # context.edges: signatures: the callers' and callees' lines shown
    edges_of: str = ""  # ... of this definition (context/edges.py)

    def render(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, object]:
        return {
            "query": self.query,
            "token_count": self.token_count,
            "max_tokens": self.max_tokens,
            "confidence": round(self.confidence, 6),
            "weak_evidence": self.weak_evidence,
            "notes": list(self.notes),
            "clusters": [t.to_dict() for t in self.clusters],
            "quotes": [self._quote(q) for q in self.quotes],
            "sources": [s.to_dict() for s in self.sources],
            "text": self.text,
            **({"needed_tokens": self.needed_tokens} if self.needed_tokens is not None else {}),
            **({"edges_of": self.edges_of, "edges": list(self.edges)} if self.edges else {}),
        }

    def _quote(self, quote: Quote) -> dict[str, object]:
        """A quote's ``to_dict``, with ``stale`` (and why) when its file changed on disk since indexed."""
        stale = next((sc.stale for sc in self.result.chunks if sc.id == quote.chunk_id), "")
        return {**quote.to_dict(), "stale": bool(stale), **({"stale_reason": stale} if stale else {})}


def fence_for(text: str) -> str:
    """A backtick fence longer than any run of backticks inside ``text`` (at least three)."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=2)
    return "`" * max(3, longest + 1)


def mark_cuts(lines: Sequence[str], cut_before: bool, cut_after: bool) -> list[str]:
    """``lines`` with ``…`` before the first and/or after the last."""
    out = list(lines)
    if out and cut_before:
        out[0] = ELLIPSIS + out[0]
    if out and cut_after:
        out[-1] += ELLIPSIS
    return out


def prose_line(line: str) -> str:
    """A line of text as quoted: ``> `` and the line, exactly; an empty line as ``>``."""
    return "> " + line if line else ">"


def with_locator(ref: str, locator: Mapping[str, object]) -> str:
    """``path:a-b`` and, for a converted document, its native place: ``manual.pdf:12-18 (p.3)``.

    The line range stays first and unchanged (editors and tools open ``path:line``); the page,
    slide, cell or sheet row follows in parentheses (``ingest/converters/locators.py``).
    """
    shown = label(locator) if locator else ""
    return f"{ref} ({shown})" if shown else ref


def locator_fields(locator: Mapping[str, object]) -> dict[str, object]:
    """The ``to_dict`` fields of a locator: ``page`` (``page_end``), ``slide``, ``cell``, ``sheet``
    and ``row``, ... and its ``locator`` label; nothing for a plain file."""
    return {**locator, "locator": label(locator)} if locator else {}


def cite(
    citation: int,
    path: str,
    start: int,
    end: int,
    style: str = "path_lines",
    locator: Mapping[str, object] = {},
) -> str:
    """A citation as the context shows it: ``[n] path:a-b`` (``context.citation_style:
    path_lines``) or ``[n | path]`` (``doc_file``, the form of prompts that cite a document and
    its file); an answer cites either as ``[n]``.

    >>> cite(2, "src/a.py", 3, 9), cite(2, "src/a.py", 3, 9, "doc_file")
    ('[2] src/a.py:3-9', '[2 | src/a.py]')
    """
    if style == "doc_file":
        return f"[{citation} | {path}]"
    return f"[{citation}] " + with_locator(f"{path}:{start}-{end}", locator or {})


def quote_block(header: str, lines: Sequence[str], source_type: SourceType, language: str) -> str:
    """The citation ``header`` then the lines: fenced with their language for code, ``> ``-quoted for text."""
    if source_type is SourceType.CODE:
        fence = fence_for("\n".join(lines))
        lang = "" if language in ("text", "unknown") else language
        body = "\n".join([fence + lang, *lines, fence])
    else:
        body = "\n".join(map(prose_line, lines))
    return f"{header}\n{body}\n"


def header_block(query: str, confidence: float, weak: bool, notes: Sequence[str]) -> str:
    lines = ["# Context", f"Question: {query}", f"Retrieval confidence: {confidence:.2f}"]
    if weak:
        lines[-1] += " (weak: the evidence may not answer the question)"
    lines.extend(f"Note: {note}" for note in notes)
    return "\n".join(lines) + "\n"


def topic_heading(number: int, summary: str, citations: Sequence[int]) -> str:
    marks = "".join(f"[{c}]" for c in citations)
    text = f"## Topic {number}: {summary}" if summary else f"## Topic {number}"
    return f"{text} {marks}".rstrip() + "\n"


def sources_block(sources: Sequence[Source], style: str = "path_lines") -> str:
    lines = ["## Sources"]
    lines.extend(
        f"{cite(s.citation, s.path, s.start_line, s.end_line, style, s.locator)} (chunk {s.chunk_id})"
        for s in sources
    )
    if not sources:
        lines.append("(none)")
    return "\n".join(lines) + "\n"


def render_context(
    query: str,
    confidence: float,
    weak: bool,
    notes: Sequence[str],
    topics: Sequence[Topic],
    quotes: Sequence[Quote],
    sources: Sequence[Source],
    style: str = "path_lines",
) -> str:
    """The prompt-ready text: header, each topic with its quotes, then the Sources list
    (citations in ``style``, see ``cite``)."""
    parts = [header_block(query, confidence, weak, notes)]
    for topic in topics:
        parts.append("\n" + topic_heading(topic.number, topic.summary, topic.citations))
        for q in quotes:
            if q.topic == topic.number:
                header = cite(q.citation, q.path, q.start_line, q.end_line, style, q.locator)
                parts.append(quote_block(header, q.shown_lines(), q.source_type, q.language))
    parts.append("\n" + sources_block(sources, style))
    return "".join(parts)
