"""Comments cite what a reader can open: every ``RESULTS.md#<anchor>`` and
``docs/contributing.md#<anchor>`` cited in the code, the tests, the scripts, the benchmarks and the
docs names an ``<a id>`` that exists; no comment cites a numbered style rule of a guide the
repository does not contain, or a RESULTS.md section by its number (numbers move; anchors do not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "RESULTS.md"
GUIDE = REPO / "docs" / "contributing.md"
FOLDERS = ("hybrid_rag", "tests", "scripts", "benchmarks", "docs")
SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".toml"}
ANCHOR = re.compile(r'<a id="([a-z0-9-]+)"></a>')
RESULTS_CITE = re.compile(r"RESULTS\.md#([A-Za-z0-9_-]+)")
GUIDE_CITE = re.compile(r"contributing\.md#([A-Za-z0-9_-]+)")
STYLE_TAG = re.compile(r"\bSTYLE \d+")
NUMBERED_CITE = re.compile(r"RESULTS(?:\.md)?[`,]*\s+(?:sections?\s+|§\s*)?\d+(?:\.\d+)?\b")
BARE_SECTION = re.compile(r"\b[Ss]ections?\s+\d+(?:\.\d+)?\b")  # "(section 21)": of RESULTS.md, by number


def _sources() -> list[Path]:
    files = [REPO / "README.md"]
    for folder in FOLDERS:
        files += [p for p in sorted((REPO / folder).rglob("*")) if p.suffix in SUFFIXES and p.is_file()]
    here = Path(__file__).resolve()  # its examples below are what the others must not contain
    return [p for p in files if "results" not in p.relative_to(REPO).parts[:2] and p.resolve() != here]


def _cites(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """anchor -> the files that cite it."""
    found: dict[str, list[str]] = {}
    for path in _sources():
        for anchor in pattern.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(anchor, []).append(str(path.relative_to(REPO)))
    return found


def anchors(document: Path) -> list[str]:
    return ANCHOR.findall(document.read_text(encoding="utf-8"))


@pytest.mark.parametrize("document", [RESULTS, GUIDE], ids=["RESULTS.md", "contributing.md"])
def test_each_anchor_is_defined_once(document: Path) -> None:
    names = anchors(document)
    assert names, f"{document.name} defines no anchors"
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_every_cited_results_anchor_exists() -> None:
    cited, defined = _cites(RESULTS_CITE), set(anchors(RESULTS))
    assert len(cited) >= 20  # the code cites the measurements it rests on
    missing = {a: files for a, files in cited.items() if a not in defined}
    assert not missing, f"RESULTS.md has no <a id> for: {missing}"


def test_every_cited_guide_anchor_exists() -> None:
    cited, defined = _cites(GUIDE_CITE), set(anchors(GUIDE))
    assert len(cited) >= 5
    missing = {a: files for a, files in cited.items() if a not in defined}
    assert not missing, f"docs/contributing.md has no <a id> for: {missing}"


def test_no_comment_cites_an_outside_style_rule_by_number() -> None:
    tagged = [
        f"{path.relative_to(REPO)}: {m.group(0)}"
        for path in [*_sources(), RESULTS]
        for m in STYLE_TAG.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not tagged, f"cite docs/contributing.md#<anchor> instead: {tagged}"


def test_no_comment_cites_a_results_section_by_number() -> None:
    numbered = [
        f"{path.relative_to(REPO)}: {m.group(0)!r}"
        for path in _sources()
        if path.suffix == ".py" or path.parent.name == "docs" or path.name == "README.md"
        for m in NUMBERED_CITE.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not numbered, f"cite RESULTS.md#<anchor> instead: {numbered}"


def test_the_package_and_the_docs_cite_no_section_by_number() -> None:
    """A bare "section 21" in the package or the docs means RESULTS.md's; the studies' renderers may
    still write numbered prose into RESULTS.md itself."""
    numbered = [
        f"{path.relative_to(REPO)}: {m.group(0)!r}"
        for path in _sources()
        if path.parts[len(REPO.parts)] in ("hybrid_rag", "docs") or path.name == "README.md"
        for m in BARE_SECTION.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not numbered, f"cite RESULTS.md#<anchor> instead: {numbered}"


@pytest.mark.parametrize(
    "text, numbered",
    [
        ("(RESULTS.md section 21)", True),
        ("benchmarks/RESULTS.md sections 29 and 38", True),
        ("(RESULTS 42.3)", True),
        ("dense alone (RESULTS.md 38)", True),
        ("(RESULTS.md#repository-answers)", False),
        ("every study's section of RESULTS.md from JSON", False),
    ],
)
def test_a_numbered_cite_is_recognised(text: str, numbered: bool) -> None:
    assert bool(NUMBERED_CITE.search(text)) is numbered
