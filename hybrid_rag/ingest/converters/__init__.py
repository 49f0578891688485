"""Documents as text: one converter per format, chosen by file extension, imported on first use.

``convert(name, raw, settings)`` returns the :class:`Converted` text or raises
:class:`Unconvertible` with the skip reason. A format's module (and its library: pypdfium2,
python-docx, python-pptx, openpyxl) is imported only when a file of that format is read.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import PurePosixPath

from hybrid_rag.ingest.converters.base import (
    Converted,
    Converter,
    Locator,
    Unconvertible,
    locate,
)
from hybrid_rag.settings import ConvertSettings

__all__ = ["FORMATS", "Converted", "Converter", "Locator", "Unconvertible", "convert", "format_of", "locate"]

# extension -> (module, class): every format read by conversion
FORMATS: dict[str, tuple[str, str]] = {
    ".pdf": ("pdf", "PdfConverter"),
    ".docx": ("docx", "DocxConverter"),
    ".pptx": ("pptx", "PptxConverter"),
    ".html": ("html", "HtmlConverter"),
    ".htm": ("html", "HtmlConverter"),
    ".xhtml": ("html", "HtmlConverter"),
    ".ipynb": ("notebook", "NotebookConverter"),
    ".epub": ("epub", "EpubConverter"),
    ".csv": ("sheets", "CsvConverter"),
    ".tsv": ("sheets", "CsvConverter"),
    ".xlsx": ("sheets", "XlsxConverter"),
}


def format_of(name: str) -> str | None:
    """The converted format's extension for a file name (``"a/B.PDF"`` -> ``".pdf"``), or None."""
    suffix = PurePosixPath(name).suffix.lower()
    return suffix if suffix in FORMATS else None


@cache
def _converter(suffix: str) -> Converter:
    module, cls = FORMATS[suffix]
    return getattr(importlib.import_module(f"hybrid_rag.ingest.converters.{module}"), cls)()  # type: ignore[no-any-return]


def convert(name: str, raw: bytes, settings: ConvertSettings) -> Converted:
    """``raw`` (the bytes of file ``name``) as text; raises Unconvertible with the reason.

    A missing library is a reason too (``pip install 'hybrid-rag[documents]'``), not a crash.
    """
    suffix = format_of(name)
    if suffix is None:
        raise Unconvertible(f"no converter for {PurePosixPath(name).suffix or name}")
    try:
        converter = _converter(suffix)
        converted = converter.convert(raw, settings)
    except ImportError as exc:
        raise Unconvertible(
            f"{suffix} needs the {exc.name or 'converter'} package: pip install 'hybrid-rag[documents]'"
        ) from None
    except Unconvertible:
        raise
    except Exception as exc:
        raise Unconvertible(
            f"cannot convert {suffix} ({type(exc).__name__}: {str(exc).strip()[:200]})"
        ) from None
    if len(converted.text) > settings.max_text_chars:
        raise Unconvertible(f"more than convert.max_text_chars {settings.max_text_chars} characters of text")
    if not converted.text.strip():
        raise Unconvertible(f"no text in the {suffix} file")
    return converted
