"""PowerPoint (PPTX): each slide's text (title as a heading, then its shapes and tables in order)
and its speaker notes, one unit per slide (``python-pptx``, MIT)."""

from __future__ import annotations

import io

from hybrid_rag.ingest.converters.base import (
    SLIDE,
    Assembler,
    Converted,
    Unconvertible,
    check_units,
    check_zip_container,
    one_line,
)
from hybrid_rag.settings import ConvertSettings


class PptxConverter:
    name = "pptx"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        check_zip_container(raw, "PPTX", settings)
        import pptx  # only when a PPTX is read

        try:
            slides = list(pptx.Presentation(io.BytesIO(raw)).slides)
        except Exception as exc:
            raise Unconvertible(f"corrupt PPTX ({one_line(exc)})") from None
        check_units(len(slides), "slides", settings)
        text = Assembler(SLIDE)
        for number, slide in enumerate(slides, start=1):
            text.unit(number, "\n".join(_slide_lines(number, slide)))
        if not text.locators:
            raise Unconvertible(f"PPTX without text ({len(slides)} slides)")
        return text.done(self.name, "markdown")


def _slide_lines(number: int, slide: object) -> list[str]:
    title_shape = slide.shapes.title  # type: ignore[attr-defined]
    title = (
        " ".join(title_shape.text_frame.text.split())
        if title_shape is not None and title_shape.has_text_frame
        else ""
    )
    lines = [f"## Slide {number}" + (f": {title}" if title else "")]
    body: list[str] = []
    for shape in slide.shapes:  # type: ignore[attr-defined]
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        body.extend(_shape_lines(shape))
    notes = ""
    if slide.has_notes_slide:  # type: ignore[attr-defined]
        frame = slide.notes_slide.notes_text_frame  # type: ignore[attr-defined]
        notes = " ".join(frame.text.split()) if frame is not None else ""
    if not body and not notes and not title:
        return []
    lines.extend(body)
    if notes:
        lines.append(f"Notes: {notes}")
    return lines


def _shape_lines(shape: object) -> list[str]:
    out: list[str] = []
    if getattr(shape, "has_text_frame", False):
        for paragraph in shape.text_frame.paragraphs:  # type: ignore[attr-defined]
            text = " ".join("".join(run.text for run in paragraph.runs).split())
            if text:
                out.append(("  " * paragraph.level) + "- " + text if paragraph.level else text)
    if getattr(shape, "has_table", False):
        for row in shape.table.rows:  # type: ignore[attr-defined]
            cells = [" ".join(cell.text.split()) for cell in row.cells]
            if any(cells):
                out.append("| " + " | ".join(cells) + " |")
    for child in getattr(shape, "shapes", ()):  # a group
        out.extend(_shape_lines(child))
    return out
