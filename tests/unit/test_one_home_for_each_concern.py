"""Each formula and each decision is written once, found by reading the source with ``ast``: the
RRF term (``fusion.rrf_term``), the embedding cache's reads and writes (``store/``), the self-check
dispatch (``Engine.retrieve``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_rag"
RRF_NAMES = {"k", "rrf_k", "RRF_K"}


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE.parent).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def rrf_terms(tree: ast.Module) -> list[int]:
    """Lines dividing by ``k + something`` with k the RRF constant: an RRF term written out."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.BinOp)
        and isinstance(node.right.op, ast.Add)
        and (
            _names(node.right) & RRF_NAMES
            or any(isinstance(c, ast.Constant) and c.value == 60 for c in ast.walk(node.right))
        )
    ]


def calls(tree: ast.Module, name: str) -> list[int]:
    """Lines calling a function or method called ``name``."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )
    ]


def test_the_finders_see_what_they_look_for() -> None:
    tree = ast.parse("def f(rank, k=60):\n    return 1.0 / (k + rank) + g.put_embeddings(x)\n")
    assert rrf_terms(tree) == [2] and calls(tree, "put_embeddings") == [2]
    assert rrf_terms(ast.parse("x = a / (b + c)")) == []


def test_the_rrf_term_is_written_once_in_fusion() -> None:
    found = {module: lines for module, tree in modules() if (lines := rrf_terms(tree))}
    assert (
        list(found) == ["hybrid_rag/retrieval/fusion.py"]
        and len(found["hybrid_rag/retrieval/fusion.py"]) == 1
    )


def test_only_the_store_reads_and_writes_cached_vectors() -> None:
    for method in ("cached_windows", "put_embeddings"):
        outside = [
            m for m, tree in modules() if calls(tree, method) and not m.startswith("hybrid_rag/store/")
        ]
        assert outside == [], method


def test_the_self_check_is_dispatched_in_one_place() -> None:
    built = {module: lines for module, tree in modules() if (lines := calls(tree, "SelfCheck"))}
    assert list(built) == ["hybrid_rag/engine.py"] and len(built["hybrid_rag/engine.py"]) == 1
