"""Every module under ``tests/integration`` carries the ``integration`` marker, so
``-m "not integration"`` leaves out all of them (13 of 25 lacked it)."""

from __future__ import annotations

import ast
from pathlib import Path

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"


def _marks_integration(path: Path) -> bool:
    """The module's ``pytestmark`` names it (a mark on some of its functions is not enough)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            return "pytest.mark.integration" in ast.unparse(node.value)
    return False


def test_every_integration_module_is_marked() -> None:
    modules = sorted(INTEGRATION.glob("test_*.py"))
    assert len(modules) >= 25
    assert [p.name for p in modules if not _marks_integration(p)] == []
