"""The package's import graph: no cycle, only ``store/`` knows the tables, stages take their own section.

Imports are read with ``ast`` from the source, so the tests hold without importing anything heavy.
Every import counts, wherever it is written: at module level, inside ``try``/``if``, under ``if
TYPE_CHECKING:`` and inside a function. A lazy import keeps start-up cheap; it does not make an
arrow that runs up the house acceptable, so a cycle through one fails as any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_rag"
MODULES = {
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
    for path in sorted(PACKAGE.rglob("*.py"))
}


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join(parts + ([node.module] if node.module else []))


def imports_of(module: str) -> set[str]:
    """The package's modules that ``module`` imports anywhere (functions and TYPE_CHECKING too)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names
            ]
        else:
            continue
        found.update(name for name in names if name in MODULES and name != module)
    return found


def graph() -> dict[str, set[str]]:
    return {module: imports_of(module) for module in MODULES}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None when the graph is acyclic (iterative DFS)."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    for root in sorted(edges):
        if state.get(root):
            continue
        stack: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                path = [n for n, _ in stack]
                return [*path[path.index(child) :], child]
            elif not state.get(child):
                state[child] = 1
                stack.append((child, iter(sorted(edges.get(child, ())))))
    return None


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_reads_relative_and_submodule_imports() -> None:
    edges = graph()
    assert "hybrid_rag.retrieval.fusion" in edges["hybrid_rag.retrieval.retriever"]
    assert "hybrid_rag.store.schema" in edges["hybrid_rag.store.store"]
    assert len(MODULES) > 50


def test_the_graph_reads_imports_inside_functions_and_type_checking() -> None:
    edges = graph()
    assert "hybrid_rag.indices.milvus.versions" in edges["hybrid_rag.indices.live"]  # inside open_versions
    assert "hybrid_rag.indices.ann" in edges["hybrid_rag.indices.built"]  # under TYPE_CHECKING


def test_package_has_no_import_cycle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_only_the_store_imports_its_tables() -> None:
    outside = sorted(
        module
        for module, targets in graph().items()
        if "hybrid_rag.store.schema" in targets and not module.startswith("hybrid_rag.store")
    )
    assert outside == []


def test_no_module_outside_the_store_imports_sqlalchemy_tables() -> None:
    """Lazy imports count here too: the tables' names appear nowhere outside ``store/``."""
    outside = sorted(
        module
        for module, path in MODULES.items()
        if not module.startswith("hybrid_rag.store") and "store.schema" in path.read_text(encoding="utf-8")
    )
    assert outside == []


ROOTS = ("hybrid_rag.engine", "hybrid_rag.cli", "hybrid_rag.settings", "hybrid_rag.evaluation")


def _constructors_taking_settings() -> Iterator[str]:
    for module, path in MODULES.items():
        if module.startswith(ROOTS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for fn in cls.body:
                if not isinstance(fn, ast.FunctionDef) or fn.name != "__init__":
                    continue
                for arg in fn.args.args + fn.args.kwonlyargs:
                    note = ast.unparse(arg.annotation) if arg.annotation else ""
                    if note.strip("'\"") in ("Settings", "settings.Settings", "Settings | None"):
                        yield f"{module}.{cls.name}({arg.arg}: {note})"


@pytest.mark.parametrize("root", ROOTS)
def test_the_composition_roots_exist(root: str) -> None:
    assert any(m == root or m.startswith(root + ".") for m in MODULES)


def test_no_stage_constructor_takes_the_root_settings() -> None:
    assert list(_constructors_taking_settings()) == []
