"""No module of the package is over 600 lines: a file that grows past it is split along its seams
(``cli/`` one module per group of commands, the store's method groups, the engine's lifecycle),
so a reader can hold one in their head. No allow-list: every module fits."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_rag"
MOST_LINES = 600


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_600_lines() -> None:
    over = {
        str(path.relative_to(PACKAGE.parent)): _lines(path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if _lines(path) > MOST_LINES
    }
    assert over == {}, f"modules over {MOST_LINES} lines (split them along their seams): {over}"


def test_the_count_reads_every_module() -> None:
    modules = list(PACKAGE.rglob("*.py"))
    assert len(modules) > 100 and any(p.parent.name == "cli" for p in modules)
