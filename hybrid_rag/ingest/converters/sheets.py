"""Spreadsheets: CSV/TSV (the standard ``csv`` module) and XLSX (``openpyxl``, MIT, read-only,
cached values, not formulas). The first non-empty row of a sheet is its header; every later row
becomes one self-describing line ``header: value; header: value`` (empty cells left out), so a
chunk of rows is understood without the header. The locator is the sheet and the row number as
the spreadsheet shows it (the header is row 1): ``Sheet1 rows 4-9``."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from hybrid_rag.ingest.converters.base import (
    ROW,
    Assembler,
    Converted,
    Unconvertible,
    check_zip_container,
    one_line,
)
from hybrid_rag.ingest.loaders import decode_text
from hybrid_rag.settings import ConvertSettings


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


def row_line(header: Sequence[str], row: Sequence[object]) -> str:
    """``"name: Ada; year: 1843"``: each non-empty cell under its header (``column N`` without one)."""
    parts = []
    for i, value in enumerate(row):
        text = _cell(value)
        if text:
            name = header[i] if i < len(header) and header[i] else f"column {i + 1}"
            parts.append(f"{name}: {text}")
    return "; ".join(parts)


def add_sheet(
    out: Assembler, rows: Iterable[tuple[int, Sequence[object]]], name: str, budget: list[int]
) -> None:
    """Rows (number, cells) of one sheet into ``out``; ``budget[0]`` counts down rows left."""
    header: list[str] | None = None
    for number, row in rows:
        if header is None:
            if any(_cell(v) for v in row):
                header = [_cell(v) for v in row]
            continue
        line = row_line(header, row)
        if not line:
            continue
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooMany
        out.row(number, line, name)


class _TooMany(Exception):
    pass


def _refuse_rows(settings: ConvertSettings) -> Unconvertible:
    return Unconvertible(f"more than convert.max_rows {settings.max_rows} rows")


class CsvConverter:
    name = "csv"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        text, reason = decode_text(raw)
        if text is None:
            raise Unconvertible(f"CSV {reason}")
        try:
            dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel_tab if text[:8192].count("\t") > text[:8192].count(",") else csv.excel
        out = Assembler(ROW)
        budget = [settings.max_rows]
        reader = csv.reader(io.StringIO(text, newline=""), dialect)
        try:
            add_sheet(out, enumerate(reader, start=1), "", budget)
        except _TooMany:
            raise _refuse_rows(settings) from None
        except csv.Error as exc:
            raise Unconvertible(f"corrupt CSV ({one_line(exc)})") from None
        if not out.locators:
            raise Unconvertible("CSV without rows under its header")
        return out.done(self.name)


class XlsxConverter:
    name = "xlsx"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        check_zip_container(raw, "XLSX", settings)
        import openpyxl  # only when an XLSX is read

        try:
            book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
        except Exception as exc:
            raise Unconvertible(f"corrupt XLSX ({one_line(exc)})") from None
        try:
            declared = sum((ws.max_row or 0) for ws in book.worksheets if hasattr(ws, "max_row"))
            if declared > settings.max_rows + len(book.worksheets):  # each sheet's header is a row
                raise _refuse_rows(settings)
            out = Assembler(ROW)
            budget = [settings.max_rows]
            for ws in book.worksheets:
                rows = enumerate(ws.iter_rows(values_only=True), start=1)
                add_sheet(out, rows, ws.title, budget)
        except _TooMany:
            raise _refuse_rows(settings) from None
        finally:
            book.close()
        if not out.locators:
            raise Unconvertible(f"XLSX without rows under a header ({len(book.worksheets)} sheets)")
        return out.done(self.name)
