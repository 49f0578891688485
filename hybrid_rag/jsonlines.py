"""JSON lines, read one way everywhere (BEIR corpora, ``embeddings.jsonl``, imports)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number from 1, parsed value) for every non-blank line; a line that is not JSON gives
    its ``json.JSONDecodeError`` as the value, so each caller decides to raise or to skip it."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, exc


def read_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``json_lines`` of a UTF-8 file (a byte-order mark is dropped), read a line at a time."""
    with Path(path).open(encoding="utf-8-sig") as handle:
        yield from json_lines(handle)
