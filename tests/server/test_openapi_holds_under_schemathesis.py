"""schemathesis against the real server on a small store: every check (no 5xx, documented statuses,
response schemas and headers, schema-valid requests taken and schema-violating ones refused, auth
not ignored, the Allow header of a 405), a bounded number of examples (about a minute).

Three fields have a grammar the schema cannot state: ``filters`` (the filter language),
``features`` (some combinations retrieve nothing) and ``lang`` (a language code, of the letters
its pattern allows). Random text there is refused by design (422 naming the field), so the document
given to schemathesis narrows them to a few valid values;
the refusals themselves are pinned in test_bad_requests_answer_4xx_naming_the_field.py. A multipart
form is text, so "a number where a string is due" cannot be sent to POST /v1/documents: schemathesis
skips its negative-data check there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from live_server import KEY, LiveServer, server_settings

from hybrid_rag.engine import Engine
from hybrid_rag.server.auth import ApiKeys

pytestmark = pytest.mark.integration
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
EXAMPLES = 25  # a case budget per operation and phase: about a minute in all
VALID = {
    "filters": {
        "anyOf": [{"enum": ["source_type = code", "path ~ '**/*.md'", "size > 1"]}, {"type": "null"}]
    },
    "features": {
        "anyOf": [
            {"enum": [{"rerank": False}, {"mmr": True}, {"expansion": False, "routing": True}]},
            {"type": "null"},
        ]
    },
    "lang": {"anyOf": [{"enum": ["en", "RU", "pt", "und", "yue"]}, {"type": "null"}]},
}
CONFIG = """
[[operations]]
include-path = "/v1/documents"
include-method = "POST"
checks.negative_data_rejection.enabled = false
"""


def narrowed(document: dict) -> dict:
    for name, model in document["components"]["schemas"].items():
        for field, schema in VALID.items():
            if name.endswith("Body") and field in model.get("properties", {}):
                model["properties"][field] = schema
    return document


def run_schemathesis(url: str, folder: Path, examples: int = EXAMPLES) -> tuple[int, str, dict]:
    """(exit code, output, the run's summary as reported) for schemathesis on the server at ``url``."""
    spec, config, report = folder / "openapi.json", folder / "schemathesis.toml", folder / "report.json"
    document = httpx.get(f"{url}/openapi.json", timeout=30).json()
    spec.write_text(json.dumps(narrowed(document)))
    config.write_text(CONFIG)
    command = [str(SCHEMATHESIS), "--config-file", str(config), "run", str(spec), "--url", url]
    command += ["-H", f"Authorization: Bearer {KEY}", "-n", str(examples), "--seed", "25", "--workers", "1"]
    command += ["--report", "ndjson", "--report-ndjson-path", str(report), "--no-color"]
    # in the test's folder: schemathesis keeps a .schemathesis/ cache in its working directory
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False, cwd=folder)
    return done.returncode, done.stdout + done.stderr, _summary(report)


def _summary(report: Path) -> dict:
    """Cases and failures counted from schemathesis' event stream."""
    cases = failures = 0
    statuses: dict[str, int] = {}
    for line in report.read_text().splitlines() if report.is_file() else []:
        event = json.loads(line)
        for kind, body in event.items():
            if kind == "ScenarioFinished":
                for case in (body.get("recorder") or {}).get("interactions", {}).values():
                    response = case.get("response") or {}
                    if response:
                        cases += 1
                        code = str(response.get("status_code"))
                        statuses[code] = statuses.get(code, 0) + 1
                for check in (body.get("recorder") or {}).get("checks", {}).values():
                    failures += sum(1 for c in check if str(c.get("status")).lower() == "failure")
    return {"cases": cases, "failures": failures, "statuses": dict(sorted(statuses.items()))}


def small_server(tmp_path: Path) -> tuple[LiveServer, Engine]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "soil.md").write_text("# Soil\n\nClay soil holds water; sand drains fast.\n")
    (docs / "area.py").write_text("def circle_area(radius):\n    return 3.14159 * radius * radius\n")
    settings = server_settings(tmp_path, **{"server.ingest_roots": [str(docs)]})
    engine = Engine(settings)
    engine.ingest([docs])
    return LiveServer(settings, ApiKeys.of((KEY,)), engine), engine


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    server, _ = small_server(tmp_path)
    try:
        code, output, summary = run_schemathesis(server.url, tmp_path)
    finally:
        server.stop()
    assert code == 0, output[-6000:]
    assert summary["failures"] == 0 and not any(s.startswith("5") for s in summary["statuses"]), summary
