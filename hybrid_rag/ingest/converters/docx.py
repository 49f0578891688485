"""Word (DOCX): paragraphs in document order, headings as Markdown headings, list items as
``- ``, tables as ``| a | b |`` rows (``python-docx``, MIT). A DOCX has no fixed pages, so its
citations are lines of the converted text (under the heading they follow)."""

from __future__ import annotations

import io
import re

from hybrid_rag.ingest.converters.base import Converted, Unconvertible, check_zip_container, one_line
from hybrid_rag.settings import ConvertSettings

_HEADING = re.compile(r"^(?:heading|überschrift|titre)\s*(\d)$", re.IGNORECASE)


class DocxConverter:
    name = "docx"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        check_zip_container(raw, "DOCX", settings)
        import docx  # only when a DOCX is read
        from docx.table import Table

        try:
            document = docx.Document(io.BytesIO(raw))
            blocks = list(document.iter_inner_content())
        except Exception as exc:
            raise Unconvertible(f"corrupt DOCX ({one_line(exc)})") from None
        lines: list[str] = []
        chars = 0
        for block in blocks:
            out = _table(block) if isinstance(block, Table) else _paragraph(block)
            if not out:
                continue
            if lines and not (out[0].startswith("- ") and lines[-1].startswith("- ")):
                lines.append("")  # a blank line between paragraphs, as Markdown has them
            lines.extend(out)
            chars += sum(len(line) + 1 for line in out)
            if chars > settings.max_text_chars:
                raise Unconvertible(
                    f"more than convert.max_text_chars {settings.max_text_chars} characters of text"
                )
        if not any(line.strip() for line in lines):
            raise Unconvertible("DOCX without text")
        return Converted("\n".join(lines) + "\n", self.name, (), "markdown")


def _paragraph(paragraph: object) -> list[str]:
    text = " ".join(str(paragraph.text).split())  # type: ignore[attr-defined]
    if not text:
        return []
    style = getattr(getattr(paragraph, "style", None), "name", "") or ""
    match = _HEADING.match(style.strip())
    if match:
        return ["#" * max(1, min(6, int(match.group(1)))) + " " + text]
    if style.strip().lower() == "title":
        return ["# " + text]
    if style.lower().startswith("list"):
        return ["- " + text]
    return [text]


def _table(table: object) -> list[str]:
    rows = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells = [" ".join(cell.text.split()) for cell in row.cells]
        unique = [c for i, c in enumerate(cells) if i == 0 or c != cells[i - 1]]  # merged cells repeat
        if any(unique):
            rows.append("| " + " | ".join(unique) + " |")
    return rows
