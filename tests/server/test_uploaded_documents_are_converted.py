"""POST /v1/documents takes a PDF or a DOCX like a text file: it is converted, and /v1/context
and /v1/query cite the PDF's page."""

from __future__ import annotations

import document_files as make
from live_server import LiveServer, wait_job


def test_upload_pdf_and_docx_then_cite_the_page(live: LiveServer) -> None:
    pdf = make.pdf(["Bees need water nearby.", "A queen excluder keeps the queen out of the honey supers."])
    docx = make.docx([("h1", "Hive care"), ("p", "Smoke calms the colony before an inspection.")])
    with live.client() as client:
        queued = client.post(
            "/v1/documents",
            files=[("files", ("bees.pdf", pdf)), ("files", ("care.docx", docx))],
            data={"collection": "bees"},
        )
        assert queued.status_code == 202, queued.text
        job = wait_job(client, queued.json()["id"])
        assert job["status"] == "done", job
        listed = client.get("/v1/documents", params={"collection": "bees"}).json()
        assert sorted(d["path"].rsplit("/", 1)[-1] for d in listed["documents"]) == ["bees.pdf", "care.docx"]
        body = {"query": "queen excluder honey supers", "filters": "path~*.pdf", "max_tokens": 1000}
        context = client.post("/v1/context", json=body)
        assert context.status_code == 200, context.text
        quotes = context.json()["quotes"]
        assert quotes and quotes[0]["page"] in (1, 2) and "p" in quotes[0]["locator"]
        found = client.post("/v1/query", json={"query": "queen excluder", "filters": "path~*.pdf"}).json()
        hit = found["results"][0]  # the citation query and context print, not path:lines alone
        lines = f"{hit['path']}:{hit['start_line']}-{hit['end_line']}"
        assert (
            hit["citation"] in (f"{lines} (p.{n})" for n in (1, 2)) or hit["citation"] == f"{lines} (pp.1-2)"
        )
        smoke = client.post(
            "/v1/query", json={"query": "smoke calms the colony", "filters": "path~*.docx"}
        ).json()
        assert smoke["results"] and "Smoke calms" in smoke["results"][0]["text"]
