"""Each document format becomes text with Markdown headings where it has them, and a locator map
that says which lines come from which page, slide, cell, chapter or sheet row; a zip's documents
are converted too; with ``convert.enabled: false`` the formats are what they were before."""

from __future__ import annotations

import zipfile
from pathlib import Path

import document_files as make
import pytest

from hybrid_rag.ingest.archive import load_zip
from hybrid_rag.ingest.converters import convert
from hybrid_rag.ingest.converters.base import locate
from hybrid_rag.ingest.converters.cache import Conversion
from hybrid_rag.ingest.loaders import load_file
from hybrid_rag.settings import ArchiveSettings, ConvertSettings, LoadingSettings
from hybrid_rag.types import LoadedFile, SkippedFile, SourceType

SETTINGS = ConvertSettings()


def place(text_line: str, converted_text: str, locators: tuple) -> tuple[str, int, str]:
    """(kind, number, name) of the line holding ``text_line``."""
    line = converted_text.split("\n").index(text_line) + 1
    found = locate(locators, line)
    assert found is not None
    loc, number = found
    return loc.kind, number, loc.name


def test_pdf_pages_are_units_in_order() -> None:
    got = convert(
        "m.pdf", make.pdf(["Intro to turbines\nsecond line", "", "Cooling holes on page three"]), SETTINGS
    )
    assert "Intro to turbines\nsecond line\n" in got.text
    assert place("Cooling holes on page three", got.text, got.locators) == ("page", 3, "")
    assert place("second line", got.text, got.locators) == ("page", 1, "")
    assert [loc.number for loc in got.locators] == [1, 3]  # the empty page leaves no unit


def test_docx_headings_lists_and_tables() -> None:
    raw = make.docx(
        [("h1", "Leave policy"), ("p", "Staff get 25 days."), ("li", "ask early"), ("li", "tell HR"),
         ("h2", "Carry over"), ("table", [["year", "days"], ["2024", "5"]])]
    )  # fmt: skip
    got = convert("policy.docx", raw, SETTINGS)
    assert got.language == "markdown"
    lines = got.text.split("\n")
    assert lines[0] == "# Leave policy"
    assert "## Carry over" in lines
    assert lines[lines.index("- ask early") + 1] == "- tell HR"
    assert "| year | days |" in lines and "| 2024 | 5 |" in lines


def test_pptx_slides_with_notes() -> None:
    raw = make.pptx([("Welcome", "agenda today", "say hello"), ("Results", "revenue grew", "")])
    got = convert("deck.pptx", raw, SETTINGS)
    assert "## Slide 1: Welcome" in got.text and "Notes: say hello" in got.text
    assert place("revenue grew", got.text, got.locators) == ("slide", 2, "")


def test_html_keeps_the_main_text_and_headings_only() -> None:
    page = (
        b"<html><head><title>T</title><style>p{color:red}</style><script>var secret=1;</script></head>"
        b"<body><nav>Home | About</nav><header>Site banner</header><main><h2>Install</h2>"
        b"<p>Run the <b>installer</b> &amp; wait.</p><ul><li>one</li><li>two</li></ul></main>"
        b"<footer>copyright</footer></body></html>"
    )
    got = convert("guide.html", page, SETTINGS)
    assert got.text.split("\n")[:3] == ["## Install", "", "Run the installer & wait."]
    assert "- one\n- two" in got.text
    for noise in ("secret", "color", "Home", "banner", "copyright"):
        assert noise not in got.text


def test_html_in_its_declared_charset() -> None:
    page = '<html><head><meta charset="windows-1252"></head><body><p>Caf\u00e9 cr\u00e8me</p></body></html>'
    assert convert("menu.html", page.encode("cp1252"), SETTINGS).text == "Caf\u00e9 cr\u00e8me\n"


def test_notebook_cells_without_outputs_unless_asked() -> None:
    raw = make.notebook([("markdown", "# Analysis\nWe load data.", ""), ("code", "print(42)", "42\n")])
    got = convert("nb.ipynb", raw, SETTINGS)
    assert "```python\nprint(42)\n```" in got.text
    assert "42\n" not in got.text.replace("print(42)", "")
    assert place("print(42)", got.text, got.locators) == ("cell", 2, "")
    with_outputs = convert("nb.ipynb", raw, ConvertSettings(notebook_outputs=True))
    assert "Output:" in with_outputs.text and "\n42\n" in with_outputs.text


def test_epub_chapters_follow_the_spine() -> None:
    raw = make.epub([("Later", "second in the spine"), ("First", "first in the spine")], spine=[1, 0])
    got = convert("book.epub", raw, SETTINGS)
    assert got.text.index("first in the spine") < got.text.index("second in the spine")
    kind, number, name = place("second in the spine", got.text, got.locators)
    assert (kind, number, name) == ("chapter", 2, "OEBPS/text/ch0.xhtml")


@pytest.mark.parametrize("nav", ["epub3", "epub2"])
def test_a_navigation_page_first_in_the_spine_is_no_chapter(nav: str) -> None:
    raw = make.epub([("Dawn", "the first chapter's text"), ("Dusk", "the second chapter's text")], nav=nav)
    got = convert("book.epub", raw, SETTINGS)
    assert place("the first chapter's text", got.text, got.locators) == ("chapter", 1, "OEBPS/text/ch0.xhtml")
    assert place("the second chapter's text", got.text, got.locators)[:2] == ("chapter", 2)
    assert "Contents" not in got.text


def test_csv_and_xlsx_rows_describe_themselves() -> None:
    got = convert("people.csv", b"name,year\nAda,1843\n\nGrace,1952\n", SETTINGS)
    assert got.text == "name: Ada; year: 1843\nname: Grace; year: 1952\n"
    assert place("name: Grace; year: 1952", got.text, got.locators) == ("row", 4, "")
    raw = make.xlsx(
        {"Q1": [["item", "cost"], ["pens", 3], ["ink", None], ["paper", 7]], "Q2": [["k"], ["v"]]}
    )
    got = convert("budget.xlsx", raw, SETTINGS)
    assert "item: ink" in got.text.split("\n")
    assert place("item: paper; cost: 7", got.text, got.locators) == ("row", 4, "Q1")
    assert place("k: v", got.text, got.locators) == ("row", 2, "Q2")
    tsv = convert("t.tsv", b"a\tb\n1\t2\n", SETTINGS)
    assert tsv.text == "a: 1; b: 2\n"


def test_load_file_reads_the_converted_text_and_hashes_the_bytes(tmp_path: Path) -> None:
    raw = make.pdf(["alpha page", "beta page"])
    (tmp_path / "m.pdf").write_bytes(raw)
    loaded = load_file(tmp_path / "m.pdf", 1000)  # loading.max_file_bytes is for text files
    assert isinstance(loaded, LoadedFile)
    assert loaded.text == "alpha page\n\nbeta page\n"
    assert loaded.source_type is SourceType.TEXT
    assert [(loc.line, loc.number) for loc in loaded.locators] == [(1, 1), (3, 2)]
    import hashlib

    assert loaded.sha256 == hashlib.sha256(raw).hexdigest()


def test_zip_members_are_converted(tmp_path: Path) -> None:
    archive = tmp_path / "docs.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("manual.pdf", make.pdf(["zip page one"]))
        z.writestr("notes/deck.pptx", make.pptx([("Title", "body text", "")]))
    loaded, skipped = load_zip(archive, LoadingSettings(), ArchiveSettings())
    assert not skipped
    by_name = {Path(f.path).name: f for f in loaded}
    assert by_name["manual.pdf"].text == "zip page one\n"
    assert by_name["manual.pdf"].locators[0].kind == "page"
    assert "body text" in by_name["deck.pptx"].text


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("m.pdf", make.pdf(["x"]), "binary file type (.pdf)"),
        ("p.docx", make.docx([("p", "x")]), "binary file type (.docx)"),
    ],
)
def test_disabled_conversion_skips_documents_as_before(
    tmp_path: Path, name: str, raw: bytes, expected: str
) -> None:
    (tmp_path / name).write_bytes(raw)
    off = Conversion(ConvertSettings(enabled=False))
    got = load_file(tmp_path / name, 10**6, conversion=off)
    assert isinstance(got, SkippedFile) and got.reason == expected
    (tmp_path / "page.html").write_text("<p>raw</p>\n")
    raw_html = load_file(tmp_path / "page.html", 10**6, conversion=off)
    assert isinstance(raw_html, LoadedFile) and raw_html.text == "<p>raw</p>\n"
