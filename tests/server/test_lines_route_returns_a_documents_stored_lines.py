"""GET /v1/lines: a stored document's lines (rebuilt from its chunks) for the page's citations; it
needs the key and names the bad field like every /v1 route. The page itself and its assets need no
key, ship in the package, and the page's stage switches are the engine's feature flags."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest
from live_server import LiveServer

from hybrid_rag.server.web import STATIC
from hybrid_rag.settings import FeatureFlags

ROOT = Path(__file__).resolve().parents[2]


def test_lines_are_the_files_lines(live: LiveServer, corpus: Path) -> None:
    path = str((corpus / "src" / "geometry.py").resolve())
    file_lines = (corpus / "src" / "geometry.py").read_text().splitlines()
    with live.client() as http:
        whole = http.get("/v1/lines", params={"path": path}).json()
        part = http.get("/v1/lines", params={"path": path, "start_line": 6, "end_line": 8}).json()
        past = http.get("/v1/lines", params={"path": path, "start_line": 5, "end_line": 10_000}).json()
    assert whole["total_lines"] == len(file_lines) and not whole["truncated"]
    assert [r["text"] for r in whole["lines"]] == file_lines
    assert [r["line"] for r in part["lines"]] == [6, 7, 8]
    assert [r["text"] for r in part["lines"]] == file_lines[5:8]
    assert (past["start_line"], past["end_line"]) == (5, len(file_lines))


def test_a_path_as_results_show_it_opens_the_same_lines(live: LiveServer, corpus: Path) -> None:
    with live.client() as http:
        hit = http.post("/v1/query", json={"query": "triangle area", "top_k": 1}).json()["results"][0]
        shown = hit["path"]
        by_shown = http.get("/v1/lines", params={"path": shown}).json()
        by_stored = http.get("/v1/lines", params={"path": str((corpus / shown).resolve())}).json()
    assert not shown.startswith("/")  # results show paths relative to the ingested root
    assert by_shown["lines"] == by_stored["lines"] and by_shown["total_lines"] > 0


def test_a_range_that_ends_before_it_starts_has_no_lines(live: LiveServer, corpus: Path) -> None:
    path = str((corpus / "src" / "geometry.py").resolve())
    with live.client() as http:
        answer = http.get("/v1/lines", params={"path": path, "start_line": 9, "end_line": 3})
    assert answer.status_code == 200 and answer.json()["lines"] == []


def test_lines_need_the_key(live: LiveServer, corpus: Path) -> None:
    with live.client(key=None) as http:
        answer = http.get("/v1/lines", params={"path": str(corpus / "docs" / "garden.md")})
    assert answer.status_code == 401
    assert answer.json()["error"]["field"] == "Authorization"


def test_bad_lines_requests_name_the_field(live: LiveServer, corpus: Path) -> None:
    path = str((corpus / "src" / "geometry.py").resolve())
    cases = [
        ({"path": "/no/such/file.py"}, 404, "path"),
        ({}, 422, "path"),
        ({"path": path, "start_line": 0}, 422, "start_line"),
        ({"path": path, "start_line": "x"}, 422, "start_line"),
    ]
    with live.client() as http:
        for params, status, field in cases:
            answer = http.get("/v1/lines", params=params)
            assert answer.status_code == status, (params, answer.text)
            assert answer.json()["error"]["field"] == field, (params, answer.text)


def test_the_page_and_its_assets_need_no_key(live: LiveServer) -> None:
    with live.client(key=None) as http:
        page = http.get("/")
        assets = [http.get(f"/static/{name}") for name in ("app.js", "style.css")]
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in re.sub(r'href="/static|src="/static', "", page.text)  # nothing from elsewhere
    assert all(a.status_code == 200 for a in assets)


def test_every_asset_is_package_data() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    declared = patterns["hybrid_rag.server"]
    for asset in STATIC.iterdir():
        assert any(fnmatch.fnmatch(f"static/{asset.name}", p) for p in declared), asset.name


def test_the_pages_stage_switches_are_the_feature_flags() -> None:
    script = (STATIC / "app.js").read_text()
    listed = re.search(r"const STAGES = \[(.*?)\];", script, re.S)
    assert listed is not None
    assert re.findall(r'"(\w+)"', listed.group(1)) == list(FeatureFlags.model_fields)
