"""Jupyter notebooks (.ipynb, plain JSON: no library): markdown cells as they are, code cells
fenced with the kernel's language, one unit per cell (``cell 4`` counts every cell from 1, as
Jupyter shows them). Outputs are dropped unless ``convert.notebook_outputs`` (then the text
ones: streams and ``text/plain`` results, after their cell)."""

from __future__ import annotations

import json
from typing import Any

from hybrid_rag.ingest.converters.base import CELL, Assembler, Converted, Unconvertible, check_units
from hybrid_rag.ingest.loaders import decode_text
from hybrid_rag.settings import ConvertSettings


def _source(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


class NotebookConverter:
    name = "ipynb"

    def convert(self, raw: bytes, settings: ConvertSettings) -> Converted:
        text, reason = decode_text(raw)
        if text is None:
            raise Unconvertible(f"notebook {reason}")
        try:
            notebook = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise Unconvertible(f"corrupt notebook (not JSON: {exc})") from None
        cells = notebook.get("cells") if isinstance(notebook, dict) else None
        if not isinstance(cells, list):  # nbformat 3 kept cells under worksheets
            sheets = notebook.get("worksheets") if isinstance(notebook, dict) else None
            cells = [c for s in sheets or [] if isinstance(s, dict) for c in s.get("cells", [])]
        if not cells:
            raise Unconvertible("notebook without cells")
        check_units(len(cells), "cells", settings)
        meta = notebook.get("metadata") or {}
        language = str(
            (meta.get("kernelspec") or {}).get("language")
            or (meta.get("language_info") or {}).get("name")
            or ""
        )
        out = Assembler(CELL)
        for number, cell in enumerate(cells, start=1):
            if not isinstance(cell, dict):
                continue
            kind = cell.get("cell_type")
            source = _source(cell.get("source", cell.get("input")))
            if not source.strip():
                continue
            if kind == "code":
                body = _fenced(source, language)
                if settings.notebook_outputs:
                    body += _outputs(cell.get("outputs") or [])
            else:
                body = source
            out.unit(number, body)
        if not out.locators:
            raise Unconvertible(f"notebook without text ({len(cells)} empty cells)")
        return out.done(self.name, "markdown")


def _fenced(source: str, language: str) -> str:
    fence = "```"
    while fence in source:
        fence += "`"
    return f"{fence}{language}\n{source.rstrip()}\n{fence}"


def _outputs(outputs: list[Any]) -> str:
    parts = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        if output.get("output_type") == "stream":
            parts.append(_source(output.get("text")))
        elif isinstance(output.get("data"), dict) and "text/plain" in output["data"]:
            parts.append(_source(output["data"]["text/plain"]))
    text = "\n".join(p.rstrip() for p in parts if p.strip())
    return f"\n\nOutput:\n\n{_fenced(text, '')}" if text else ""
