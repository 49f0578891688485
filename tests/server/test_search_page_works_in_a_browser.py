"""The search page in a real browser (Debian's chromium driven by playwright) against a real server
on a fake-embedder store: the key is asked once and never put in a URL; a query shows results with
their score breakdown and the stage timings; a citation opens its lines highlighted in the file;
the context is copied; stage switches and filters reach the engine and its errors are shown.

Outside CI (``CI`` unset) the test skips when chromium or playwright is missing (chromium is installed
only when asked: ``scripts/setup.sh --with-browser``, ``SETUP_INSTALL_BROWSER=1``); in CI it fails.
With HYBRID_RAG_SCREENSHOTS=DIR it leaves its screenshots there (docs/ holds the README's).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import document_files as make
import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
# a few of this repository's own files: several chunks each, so a citation is part of its file
PROJECT = {
    "src/fusion.py": "hybrid_rag/retrieval/fusion.py",
    "src/mmr.py": "hybrid_rag/retrieval/mmr.py",
    "docs/serving.md": "docs/serving.md",
}


def _browser_or_skip() -> Any:
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "the playwright package is not installed (scripts/setup.sh installs it)"
    if missing is None and not CHROMIUM.exists():
        missing = f"{CHROMIUM} is missing (scripts/setup.sh --with-browser installs it, as root)"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"in CI the browser test must run: {missing}")
        pytest.skip(f"not in CI and {missing}")
    return sync_playwright


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name, source in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / source, root / name)
    return root


@pytest.fixture
def live(tmp_path: Path, project: Path) -> Iterator[LiveServer]:
    """A server (key KEY) over the ingested project, with the fake embedder."""
    settings = server_settings(tmp_path)
    engine = Engine(settings)
    engine.ingest([project])
    server = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    yield server
    server.stop()


@pytest.fixture
def page(live: LiveServer) -> Iterator[Any]:
    with _tab(live) as tab:
        yield tab


@contextlib.contextmanager
def _tab(live: LiveServer) -> Iterator[Any]:
    """A chromium tab (requests recorded in ``tab.requests``) allowed the clipboard of ``live``."""
    sync_playwright = _browser_or_skip()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        origin = live.url
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        tab.requests = []  # type: ignore[attr-defined]
        tab.on("request", lambda r: tab.requests.append((r.url, r.headers.get("authorization"))))
        yield tab
        context.close()
        browser.close()


def shoot(target: Any, tmp_path: Path, name: str) -> None:
    """A screenshot of the page's viewport, or of one element, into HYBRID_RAG_SCREENSHOTS or tmp_path."""
    folder = Path(os.environ.get("HYBRID_RAG_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(folder / name))


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def search(page: Any, text: str) -> None:
    page.fill("#query", text)
    page.click("#search")
    page.wait_for_selector("#results li")
    expect(page.locator("#search")).to_be_enabled()


def test_query_cite_read_and_copy(page: Any, live: LiveServer, project: Path, tmp_path: Path) -> None:
    page.goto(live.url + "/")
    page.wait_for_selector("#key-panel:not([hidden])")
    page.fill("#api-key", "not-the-key")
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#key-error:not([hidden])")
    assert "wrong API key" in page.inner_text("#key-error")
    page.fill("#api-key", KEY)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#app:not([hidden])")
    expect(page.locator("#documents li")).to_have_count(len(PROJECT))
    keyed_from = len(page.requests)

    search(page, "how are ties broken when ranked lists are fused?")
    fusion = "src/fusion.py"  # results show paths relative to the ingested root (hybrid_rag/paths.py)
    hit = page.locator("#results li").filter(has_text=fusion + ":").first
    chips = hit.locator(".breakdown .chip").all_inner_texts()
    assert any(c.startswith("dense ") for c in chips) and any(c.startswith("bm25 ") for c in chips)
    stages = page.locator("#timings .bar-row").evaluate_all("rows => rows.map(r => r.dataset.stage)")
    assert {"dense", "bm25", "fuse"} <= set(stages)
    expect(page.locator("#context-text")).not_to_be_empty(timeout=60_000)  # it follows the results
    assert fusion in page.inner_text("#context-text") and str(project) not in page.inner_text("#context-text")
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, tmp_path, "web-page.png")

    citation = hit.locator(".citation").inner_text()
    start, end = (int(n) for n in citation.rsplit(":", 1)[1].split("-"))
    hit.locator(".citation").click()
    page.wait_for_selector("#source-panel:not([hidden]) .line.hl")
    highlighted = page.locator("#source-lines .line.hl .t").all_inner_texts()
    file_lines = (project / "src" / "fusion.py").read_text().splitlines()
    assert highlighted == [line or "" for line in file_lines[start - 1 : end]]
    assert page.locator("#source-lines .line:not(.hl)").count() > 0  # the file around the cited lines
    shoot(page.locator("#source-panel"), tmp_path, "web-page-source.png")

    page.click("#copy-context")
    expect(page.locator("#copy-status")).to_have_text("copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.eval_on_selector("#context-text", "e => e.textContent") and fusion in copied

    page.wait_for_selector("#latency tr:nth-child(2)")  # a stage's p50/p95 from the query log
    shoot(page.locator("#library"), tmp_path, "web-page-library.png")
    assert page.url.rstrip("/") == live.url
    v1 = [(url, auth) for url, auth in page.requests[keyed_from:] if "/v1/" in url]
    assert v1 and all(auth == f"Bearer {KEY}" for _, auth in v1)
    assert not any(KEY in url or "not-the-key" in url for url, _ in page.requests)


def test_switches_filters_and_errors_reach_the_page(page: Any, live: LiveServer) -> None:
    page.goto(live.url + "/")
    page.fill("#api-key", KEY)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#app:not([hidden])")

    page.select_option("#mode", "bm25")
    page.select_option("#stage-mmr", "on")
    page.fill("#filters", "source_type=text")
    search(page, "API key server")
    citations = page.locator("#results .citation").all_inner_texts()
    assert citations and all(".md:" in c for c in citations)
    chips = page.locator("#results .breakdown .chip").all_inner_texts()
    assert any(c.startswith("mmr_rank ") for c in chips) and not any(c.startswith("dense ") for c in chips)

    page.fill("#filters", "no_such_field=1")
    page.fill("#query", "soil")
    page.click("#search")
    page.wait_for_selector("#error:not([hidden])")
    assert "unknown filter field 'no_such_field'" in page.inner_text("#error")


def test_a_pdf_result_is_cited_with_its_page(tmp_path: Path) -> None:
    # the page built 'manual.pdf:5-6' from path and lines, where query and context cite '(p.3)'
    folder = tmp_path / "manuals"
    folder.mkdir()
    pages = [
        "Turbine blades are cooled by film holes\nalong the leading edge of each blade.",
        "Boundary layer transition happens early\nwhen the free stream is turbulent.",
        "Compost improves drainage in clay soil\nand earthworms thrive in it.",
    ]
    (folder / "manual.pdf").write_bytes(make.pdf(pages))
    small = {"chunking.min_tokens": 8, "chunking.max_tokens": 20}  # about a chunk a page
    settings = server_settings(tmp_path, **small)
    engine = Engine(settings)
    engine.ingest([folder])
    live = LiveServer(settings, ApiKeys.of((KEY,)), engine)
    try:
        with _tab(live) as page:
            page.goto(live.url + "/")
            page.fill("#api-key", KEY)
            page.click("#key-form button[type=submit]")
            page.wait_for_selector("#app:not([hidden])")
            page.select_option("#mode", "bm25")
            search(page, "compost drainage clay soil earthworms")
            citation = page.locator("#results li .citation").first.inner_text()
            found = re.fullmatch(r"manual\.pdf:(\d+)-(\d+) \(p\.3\)", citation)
            assert found, citation
            page.locator("#results li .citation").first.click()
            page.wait_for_selector("#source-panel:not([hidden]) .line.hl")
            highlighted = page.locator("#source-lines .line.hl").evaluate_all(
                "rows => rows.map(r => Number(r.dataset.line))"
            )
            assert highlighted == list(range(int(found[1]), int(found[2]) + 1))
            assert "Compost improves drainage" in " ".join(
                page.locator("#source-lines .line.hl .t").all_inner_texts()
            )
    finally:
        live.stop()


def test_results_come_before_the_context_show_their_matching_lines_and_an_error_clears_all(
    page: Any, live: LiveServer
) -> None:
    page.goto(live.url + "/")
    page.fill("#api-key", KEY)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#app:not([hidden])")
    held: list[Any] = []
    page.route("**/v1/context", lambda route: held.append(route))  # held back: results must not wait
    search(page, "how are ties broken when ranked lists are fused?")
    assert held and page.inner_text("#context-text") == ""
    expect(page.locator("#timings .bar-row").first).to_be_visible()

    terms = ("ties", "broken", "ranked", "fused", "tie")
    for hit in page.locator("#results li").all()[:3]:
        citation = hit.locator(".citation").inner_text()
        start = int(citation.rsplit(":", 1)[1].split("-")[0].split(" ")[0])
        preview = hit.locator(".preview")
        first, last = int(preview.get_attribute("data-start")), int(preview.get_attribute("data-end"))
        marked = hit.locator(".preview .match").evaluate_all("rows => rows.map(r => Number(r.dataset.line))")
        assert marked == list(range(first, last + 1)) and first >= start
        text = " ".join(hit.locator(".preview .match").all_inner_texts()).lower()
        if first > start:  # a window past the chunk's first lines: chosen for the query's terms
            assert any(t in text for t in terms), text
    assert any(
        int(p.get_attribute("data-start")) > int(c.inner_text().rsplit(":", 1)[1].split("-")[0])
        for p, c in zip(
            page.locator("#results .preview").all(), page.locator("#results .citation").all(), strict=True
        )
    ), "some result shows lines below its chunk's first"

    held[0].continue_()
    expect(page.locator("#context-text")).not_to_be_empty(timeout=60_000)  # it follows the results
    page.unroute("**/v1/context")

    page.fill("#filters", "page>=two")
    page.click("#search")
    page.wait_for_selector("#error:not([hidden])")
    assert "page needs a number" in page.inner_text("#error")
    expect(page.locator("#search")).to_be_enabled()
    for cleared in ("#context-text", "#context-meta", "#total-ms", "#timings", "#results", "#notes"):
        expect(page.locator(cleared)).to_be_empty()


def test_a_hit_whose_file_changed_says_stale(page: Any, live: LiveServer, project: Path) -> None:
    fusion = project / "src" / "fusion.py"
    fusion.write_text(fusion.read_text() + "\n# edited after the ingest\n")
    page.goto(live.url + "/")
    page.fill("#api-key", KEY)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#app:not([hidden])")
    search(page, "how are ties broken when ranked lists are fused?")
    hits = page.locator("#results li")
    edited = hits.filter(has_text="src/fusion.py:")
    assert edited.count() >= 1
    for i in range(edited.count()):
        note = "stale: src/fusion.py changed on disk since indexed; run hybrid-rag ingest"
        expect(edited.nth(i).locator(".stale")).to_have_text(note)
    others = hits.filter(has_not_text="src/fusion.py:")
    assert others.locator(".stale").count() == 0
