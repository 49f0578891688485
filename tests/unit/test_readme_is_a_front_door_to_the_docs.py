"""README.md is a front door: short, linking every page of docs/, and no link of it or of a page
points at a file that is not there (the reference moved into docs/ pages by topic)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = sorted((REPO / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
MAX_README_BYTES = 12 * 1024


def _targets(page: Path) -> list[str]:
    return [
        t for t in LINK.findall(page.read_text(encoding="utf-8")) if not t.startswith(("http:", "https:"))
    ]


def test_the_readme_stays_short():
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes: move reference text into docs/"


def test_the_readme_links_every_docs_page():
    linked = {(README.parent / t).resolve() for t in _targets(README)}
    missing = [p.name for p in PAGES if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_every_relative_link_points_at_a_file():
    broken = [
        f"{page.relative_to(REPO)} -> {target}"
        for page in [README, *PAGES]
        for target in _targets(page)
        if not (page.parent / target).exists()
    ]
    assert not broken, f"links to nothing: {broken}"
