"""Small documents of every converted format, made by the tests themselves (no binary fixtures)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence


def pdf(pages: Sequence[str], *, encrypt: str | None = None) -> bytes:
    """A PDF with one page per text (lines drawn top-down); blank texts give pages without text."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, encrypt=encrypt, invariant=1)
    for text in pages:
        y = 800
        for line in text.split("\n"):
            if line:
                c.drawString(72, y, line)
            y -= 14
        if not text:
            c.rect(100, 100, 200, 200, fill=1)  # a "scan": marks on the page, no text layer
        c.showPage()
    c.save()
    return buf.getvalue()


def docx(blocks: Sequence[tuple[str, object]]) -> bytes:
    """("h1", text), ("p", text), ("li", text), ("table", [[cell, ...], ...]) in order."""
    import docx as python_docx

    document = python_docx.Document()
    for kind, value in blocks:
        if kind.startswith("h"):
            document.add_heading(str(value), int(kind[1:]))
        elif kind == "li":
            document.add_paragraph(str(value), style="List Bullet")
        elif kind == "table":
            rows = list(value)  # type: ignore[call-overload]
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            for r, row in enumerate(rows):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = str(cell)
        else:
            document.add_paragraph(str(value))
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def pptx(slides: Sequence[tuple[str, str, str]]) -> bytes:
    """(title, body, notes) per slide."""
    import pptx as python_pptx

    deck = python_pptx.Presentation()
    for title, body, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def xlsx(sheets: dict[str, Sequence[Sequence[object]]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def notebook(cells: Sequence[tuple[str, str, str]]) -> bytes:
    """(cell_type, source, stream output) per cell, nbformat 4."""
    out = []
    for kind, source, output in cells:
        cell: dict[str, object] = {"cell_type": kind, "metadata": {}, "source": source.splitlines(True)}
        if kind == "code":
            cell["outputs"] = (
                [{"output_type": "stream", "name": "stdout", "text": [output]}] if output else []
            )
            cell["execution_count"] = 1
        out.append(cell)
    meta = {"kernelspec": {"name": "python3", "language": "python"}}
    return json.dumps({"cells": out, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}).encode()


def epub(chapters: Sequence[tuple[str, str]], *, spine: Sequence[int] | None = None, nav: str = "") -> bytes:
    """(title, paragraph) per chapter file; ``spine`` orders them (file indexes), default as given.
    ``nav``: a table of contents first in the spine, ``"epub3"`` (a manifest item with
    ``properties="nav"``) or ``"epub2"`` (named by the guide's ``type="toc"`` reference)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        items = "".join(
            f'<item id="c{i}" href="text/ch{i}.xhtml" media-type="application/xhtml+xml"/>'
            for i in range(len(chapters))
        )
        order = spine if spine is not None else range(len(chapters))
        refs = "".join(f'<itemref idref="c{i}"/>' for i in order)
        guide = ""
        if nav:
            props = ' properties="nav"' if nav == "epub3" else ""
            items += f'<item id="toc" href="text/toc.xhtml" media-type="application/xhtml+xml"{props}/>'
            refs = '<itemref idref="toc"/>' + refs
            if nav == "epub2":
                guide = '<guide><reference type="toc" title="Contents" href="text/toc.xhtml"/></guide>'
            entries = "".join(f"<li>{title}</li>" for title, _ in chapters)
            z.writestr(
                "OEBPS/text/toc.xhtml",
                '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Contents</title></head>'
                f"<body><nav><h1>Contents</h1><ol>{entries}</ol></nav></body></html>",
            )
        z.writestr(
            "OEBPS/content.opf",
            f'<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest>{items}</manifest>'
            f"<spine>{refs}</spine>{guide}</package>",
        )
        for i, (title, text) in enumerate(chapters):
            z.writestr(
                f"OEBPS/text/ch{i}.xhtml",
                f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head>'
                f"<body><h1>{title}</h1><p>{text}</p></body></html>",
            )
    return buf.getvalue()


def zip_bomb(name: str = "word/document.xml", size: int = 50_000_000) -> bytes:
    """A zip (named like a DOCX) holding ``size`` zero bytes, compressed about a thousand times."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr(name, b"\0" * size)
    return buf.getvalue()
