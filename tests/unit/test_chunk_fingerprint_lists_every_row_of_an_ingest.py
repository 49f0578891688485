"""``scripts/chunk_fingerprint.py`` lists every chunk, symbol and reference row an ingest writes,
paths relative to the ingested folder, the same on a second run: the check that a change to
chunking or the definition finder moves no chunk (RESULTS.md#one-finder)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "chunk_fingerprint.py"


def _run(root: Path, out: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[object]]:
    spec = importlib.util.spec_from_file_location("chunk_fingerprint", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = ["chunk_fingerprint.py", str(root), str(out), "--data-dir", str(data_dir)]
    monkeypatch.setattr(sys, "argv", argv)
    assert module.main() == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_every_row_is_listed_and_a_second_run_is_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "corpus"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "pool.py").write_text(
        "import os\n\n\nclass Pool:\n    def take(self):\n        return os.getpid()\n", encoding="utf-8"
    )
    (root / "README.md").write_text("# Pool\n\nA pool of workers.\n", encoding="utf-8")
    first = _run(root, tmp_path / "a.jsonl", tmp_path / "data-a", monkeypatch)
    second = _run(root, tmp_path / "b.jsonl", tmp_path / "data-b", monkeypatch)
    assert first == second
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    kinds = {(row[0], row[1]) for row in first}
    assert {("chunk", "pkg/pool.py"), ("chunk", "README.md"), ("symbol", "pkg/pool.py")} <= kinds
    assert ("reference", "pkg/pool.py") in kinds
    symbols = [row for row in first if row[0] == "symbol"]
    assert [row[5] for row in symbols] == ["Pool", "Pool.take"]  # the qualified names
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["chunk"][0] == sum(1 for row in first if row[0] == "chunk")
