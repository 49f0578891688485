"""HTML: the main text with its headings as Markdown headings (the standard library's
``html.parser``: no dependency). Scripts, styles, navigation, headers, footers, asides and forms
are dropped; when the page has a ``<main>`` or ``<article>``, only that is kept. Block elements
end lines, list items start with ``- ``, table rows become ``| a | b |``, ``<pre>`` keeps its lines.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from hybrid_rag.ingest.converters.base import Converted, Unconvertible
from hybrid_rag.ingest.loaders import decode_text
from hybrid_rag.settings import ConvertSettings

DROPPED = frozenset(
    {"script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "svg",
     "canvas", "iframe", "object", "button", "select", "head", "title"}
)  # fmt: skip
MAIN = frozenset({"main", "article"})
BLOCKS = frozenset(
    {"p", "div", "section", "br", "hr", "blockquote", "dl", "dt", "dd", "ul", "ol", "table", "figure",
     "figcaption", "body", "address", "details", "summary"}
)  # fmt: skip
HEADINGS = {f"h{n}": n for n in range(1, 7)}
VOID = frozenset(
    {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}
)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.all: list[str] = []  # finished lines, whole page
        self.main: list[str] = []  # finished lines inside <main>/<article>
        self.line: list[str] = []
        self.dropped = 0  # depth inside dropped elements
        self.in_main = 0
        self.pre = 0
        self.prefix = ""
        self.cells: list[str] | None = None
        self.title = ""
        self.in_title = False

    def flush(self) -> None:
        text = "".join(self.line)
        self.line = []
        if self.pre:
            lines = text.split("\n")
        else:
            text = " ".join(text.split())
            lines = [self.prefix + text] if text else []
        self.prefix = ""
        for line in lines:
            self.all.append(line)
            if self.in_main:
                self.main.append(line)

    def blank(self) -> None:
        for lines, wanted in ((self.all, True), (self.main, bool(self.in_main))):
            if wanted and lines and lines[-1] != "":
                lines.append("")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in DROPPED:
            if tag not in VOID:
                self.dropped += 1
            return
        if self.dropped:
            return
        if tag in MAIN:
            self.flush()
            self.in_main += 1
        if tag == "tr":
            self.flush()
            self.cells = []
        elif tag in ("td", "th") and self.cells is not None:
            self.flush()
        elif tag in HEADINGS:
            self.flush()
            self.blank()
            self.prefix = "#" * HEADINGS[tag] + " "
        elif tag == "li":
            self.flush()
            self.prefix = "- "
        elif tag == "pre":
            self.flush()
            self.blank()
            self.pre += 1
        elif tag in BLOCKS:
            self.flush()
            if tag == "p":
                self.blank()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in DROPPED:
            self.dropped = max(0, self.dropped - 1)
            return
        if self.dropped:
            return
        if tag in ("td", "th") and self.cells is not None:
            self.cells.append(" ".join("".join(self.line).split()))
            self.line = []
        elif tag == "tr" and self.cells is not None:
            cells, self.cells = self.cells, None
            if any(cells):
                self.line = ["| " + " | ".join(cells) + " |"]
            self.flush()
        elif tag in HEADINGS or tag in ("p", "pre", "li") or tag in BLOCKS or tag in MAIN:
            self.flush()
            if tag in HEADINGS or tag in ("p", "pre"):
                self.blank()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)
            if tag in MAIN:
                self.in_main = max(0, self.in_main - 1)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        if self.dropped:
            return
        self.line.append(data)


def html_text(markup: str) -> tuple[str, str]:
    """(the main text of an HTML page, its <title>)."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    parser.flush()
    lines = parser.main if any(line.strip() for line in parser.main) else parser.all
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return ("\n".join(line.rstrip() for line in lines) + "\n" if lines else ""), " ".join(
        parser.title.split()
    )


_CHARSET = re.compile(rb"<meta[^>]+charset=[\"']?([A-Za-z0-9_.:-]+)", re.IGNORECASE)


def declared_charset_text(raw: bytes) -> str | None:
    """A page that is not UTF-8, decoded by the charset its ``<meta>`` declares (in its first
    4 KiB; ``windows-1252``, ``iso-8859-1`` ...); None without a usable declaration."""
    match = _CHARSET.search(raw[:4096])
    if not match:
        return None
    try:
        return raw.decode(match.group(1).decode("ascii"))
    except (LookupError, UnicodeDecodeError):
        return None


class HtmlConverter:
    name = "html"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        markup, reason = decode_text(raw)
        if markup is None:
            markup = declared_charset_text(raw)
        if markup is None:
            raise Unconvertible(f"HTML {reason}")
        text, _title = html_text(markup)
        if not text.strip():
            raise Unconvertible("HTML without text (after scripts, styles and navigation)")
        return Converted(text, self.name, (), "markdown")
