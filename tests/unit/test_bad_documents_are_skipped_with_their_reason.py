"""An encrypted, corrupt or scanned PDF, a DOCX that is a zip bomb, a spreadsheet over the row
limit, a document over the page or size limit: each is skipped with its own reason in the ingest
summary, never a traceback and never an empty document stored as content."""

from __future__ import annotations

from pathlib import Path

import document_files as make
import pytest
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.ingest.converters.base import OLE_MAGIC
from hybrid_rag.ingest.converters.cache import Conversion
from hybrid_rag.ingest.loaders import load_file
from hybrid_rag.settings import ConvertSettings
from hybrid_rag.types import SkippedFile

LIMITS = ConvertSettings(max_pages=3, max_rows=2, max_file_bytes=200_000)


def reason(tmp_path: Path, name: str, raw: bytes, settings: ConvertSettings = LIMITS) -> str:
    (tmp_path / name).write_bytes(raw)
    got = load_file(tmp_path / name, 10**6, conversion=Conversion(settings))
    assert isinstance(got, SkippedFile), got
    return got.reason


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("locked.pdf", make.pdf(["secret"], encrypt="pw"), "encrypted PDF (password protected)"),
        ("scan.pdf", make.pdf(["", ""]), "PDF without a text layer (2 pages; a scan? no OCR is done)"),
        ("long.pdf", make.pdf(["a", "b", "c", "d"]), "4 pages > convert.max_pages 3"),
        ("bomb.docx", make.zip_bomb(), "convert.max_ratio 100 (a zip bomb?)"),
        ("locked.docx", OLE_MAGIC + b"\0" * 512, "encrypted DOCX (password protected)"),
        ("big.xlsx", make.xlsx({"S": [["h"], ["1"], ["2"], ["3"]]}), "more than convert.max_rows 2 rows"),
        ("big.csv", b"h\n1\n2\n3\n", "more than convert.max_rows 2 rows"),
        ("empty.docx", make.docx([]), "DOCX without text"),
        ("header.csv", b"a,b\n", "CSV without rows under its header"),
        ("cells.ipynb", make.notebook([("code", "", "")]), "notebook without text (1 empty cells)"),
        ("bad.ipynb", b'{"cells": [', "corrupt notebook (not JSON:"),
        ("blank.html", b"<html><script>x()</script><nav>menu</nav></html>", "HTML without text"),
        ("huge.pdf", b"%PDF-1.4\n" + b" " * 300_000, "bytes > convert.max_file_bytes 200000"),
    ],
)
def test_each_bad_document_has_its_reason(tmp_path: Path, name: str, raw: bytes, expected: str) -> None:
    assert expected in reason(tmp_path, name, raw)


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("trunc.pdf", make.pdf(["some text here"])[:300]),
        ("garbage.pdf", b"%PDF-1.7\nthis is not a pdf at all\n"),
        ("notzip.docx", b"PK\x03\x04 not really a zip"),
        ("notzip.pptx", b"plain text named like a deck"),
        ("notzip.xlsx", b"\x00\x01\x02"),
        ("notzip.epub", b"epub?"),
    ],
)
def test_corrupt_documents_are_skipped_as_corrupt(tmp_path: Path, name: str, raw: bytes) -> None:
    assert reason(tmp_path, name, raw).startswith("corrupt ")


def test_the_ingest_summary_lists_them_and_stores_only_content(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.pdf").write_bytes(make.pdf(["the turbine blade is cooled by film holes"]))
    (root / "locked.pdf").write_bytes(make.pdf(["secret"], encrypt="pw"))
    (root / "scan.pdf").write_bytes(make.pdf([""]))
    (root / "bomb.docx").write_bytes(make.zip_bomb())
    cfg = fake_settings(tmp_path / "data")
    engine = Engine(cfg)
    try:
        report = engine.ingest([root])
        stored = [Path(d.path).name for d in engine.documents()]
    finally:
        engine.close()
    skipped = {Path(s["path"]).name: s["reason"] for s in report.to_dict()["skipped"]}
    assert set(skipped) == {"locked.pdf", "scan.pdf", "bomb.docx"}
    assert skipped["locked.pdf"] == "encrypted PDF (password protected)"
    assert stored == ["good.pdf"]
