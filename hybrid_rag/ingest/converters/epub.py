"""EPUB: a zip of XHTML chapters, read with ``zipfile`` in the order of the package's spine
(``META-INF/container.xml`` -> the OPF file -> its ``<spine>``), each chapter through the HTML
converter; one unit per chapter (``chapter 3``). No EPUB library (the common one is AGPL).

A navigation page in the spine (EPUB 3's manifest item with ``properties="nav"``, EPUB 2's
``<guide>`` reference of ``type="toc"``) is a table of contents, not a chapter: it is left out, so
that chapter 1 is the book's first chapter."""

from __future__ import annotations

import io
import posixpath
import zipfile
from xml.etree import ElementTree

from hybrid_rag.ingest.converters.base import (
    CHAPTER,
    Assembler,
    Converted,
    Unconvertible,
    check_units,
    check_zip_container,
)
from hybrid_rag.ingest.converters.html import html_text
from hybrid_rag.settings import ConvertSettings


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml(archive: zipfile.ZipFile, name: str) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(archive.read(name))
    except KeyError:
        raise Unconvertible(f"corrupt EPUB (no {name})") from None
    except ElementTree.ParseError as exc:
        raise Unconvertible(f"corrupt EPUB ({name}: {exc})") from None


def spine(archive: zipfile.ZipFile) -> list[str]:
    """The chapters' member names in reading order, navigation pages left out (module docstring)."""
    container = _xml(archive, "META-INF/container.xml")
    rootfile = next((e.get("full-path") for e in container.iter() if _local(e.tag) == "rootfile"), None)
    if not rootfile:
        raise Unconvertible("corrupt EPUB (container.xml names no package file)")
    package = _xml(archive, rootfile)
    base = posixpath.dirname(rootfile)
    items = [e for e in package.iter() if _local(e.tag) == "item" and e.get("id")]
    manifest = {e.get("id"): e.get("href", "") for e in items}

    def member(href: str) -> str:
        return posixpath.normpath(posixpath.join(base, href.split("#", 1)[0]))

    navigation = {member(e.get("href", "")) for e in items if "nav" in (e.get("properties") or "").split()}
    navigation |= {
        member(e.get("href", ""))
        for e in package.iter()
        if _local(e.tag) == "reference" and e.get("type") == "toc" and e.get("href")
    }
    order = [e.get("idref") for e in package.iter() if _local(e.tag) == "itemref"]
    names = []
    for idref in order:
        href = manifest.get(idref)
        if href and member(href) not in navigation:
            names.append(member(href))
    return names


class EpubConverter:
    name = "epub"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        check_zip_container(raw, "EPUB", settings)
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            chapters = spine(archive)
            check_units(len(chapters), "chapters", settings)
            out = Assembler(CHAPTER)
            for number, name in enumerate(chapters, start=1):
                try:
                    markup = archive.read(name).decode("utf-8", errors="replace")
                except KeyError:
                    continue  # a spine entry the zip does not hold: skip that chapter
                text, _title = html_text(markup)
                out.unit(number, text, name)
        if not out.locators:
            raise Unconvertible(f"EPUB without text ({len(chapters)} chapters)")
        return out.done(self.name, "markdown")
