"""Committed benchmark results are summaries, not raw runs: every file under benchmarks/results is
below 300 kB (raw per-query dumps beyond what RESULTS.md cites stay out of git)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 300_000  # bytes a committed result file may take


def _committed_results() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "benchmarks/results"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    names = listed.stdout.split() if listed.returncode == 0 else []
    paths = [ROOT / n for n in names] or sorted((ROOT / "benchmarks" / "results").rglob("*"))
    return [p for p in paths if p.is_file()]


def test_there_are_committed_results() -> None:
    assert any(p.name == "suite.json" for p in _committed_results())


def test_every_committed_result_file_is_under_300_kb() -> None:
    big = {
        str(p.relative_to(ROOT)): p.stat().st_size for p in _committed_results() if p.stat().st_size >= LIMIT
    }
    assert big == {}
