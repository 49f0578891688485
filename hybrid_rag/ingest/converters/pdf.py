"""PDF: the text layer of each page, in PDFium's reading order (``pypdfium2``, Apache-2.0/BSD-3).

Chosen over ``pypdf`` (BSD) by measurement (RESULTS.md#documents-as-text): the same text on generated
pages, about twice the pages per second. A page is one unit (``p.3``); an encrypted or damaged
file, or one without any text layer (a scan: no OCR here), is refused with its reason.
"""

from __future__ import annotations

from hybrid_rag.ingest.converters.base import PAGE, Assembler, Converted, Unconvertible, check_units, one_line
from hybrid_rag.settings import ConvertSettings


class PdfConverter:
    name = "pdf"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        import pypdfium2 as pdfium  # only when a PDF is read

        try:
            document = pdfium.PdfDocument(raw)
        except pdfium.PdfiumError as exc:
            message = one_line(exc)
            if "password" in message.lower():
                raise Unconvertible("encrypted PDF (password protected)") from None
            raise Unconvertible(f"corrupt PDF ({message})") from None
        try:
            pages = len(document)
            check_units(pages, "pages", settings)
            text = Assembler(PAGE)
            chars = 0
            for number in range(1, pages + 1):
                page_text = _page_text(document, number - 1)
                chars += len(page_text)
                if chars > settings.max_text_chars:
                    raise Unconvertible(
                        f"more than convert.max_text_chars {settings.max_text_chars} characters of text"
                    )
                text.unit(number, page_text)
        except pdfium.PdfiumError as exc:
            raise Unconvertible(f"corrupt PDF ({one_line(exc)})") from None
        finally:
            document.close()
        if pages == 0:
            raise Unconvertible("PDF without pages")
        if not text.locators:
            raise Unconvertible(f"PDF without a text layer ({pages} pages; a scan? no OCR is done)")
        return text.done(self.name)


def _page_text(document: object, index: int) -> str:
    page = document[index]  # type: ignore[index]
    try:
        textpage = page.get_textpage()
        try:
            return str(textpage.get_text_bounded()).replace("\x00", "")
        finally:
            textpage.close()
    finally:
        page.close()
