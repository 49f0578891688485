"""Parents and previous siblings of the nodes the extractor looks at, found in one pruned walk.

A tree-sitter node does not keep its parent: ``node.parent`` and ``node.prev_sibling`` walk down
from the root again, so each costs the node's depth, and asking them once per definition makes a
file of 3,000 nested functions quadratic (it was cubic while a signature walked every ancestor).
``Links`` walks the tree once from the root, descending only into nodes that hold a definition
(so a function body with none inside is never entered), and records every visited child's parent
and previous sibling: each answer is then a dictionary lookup. A node the walk did not reach falls
back to the node's own (slow but correct) attribute.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

_UNKNOWN = object()


class Links:
    """``parent(node)`` and ``prev_sibling(node)`` for the nodes on the way to ``targets``."""

    def __init__(self, root: Any, targets: Iterable[Any]) -> None:
        self._parent: dict[int, Any] = {}
        self._prev: dict[int, Any] = {}
        starts = sorted({t.start_byte for t in targets})
        stack = [root]
        while stack:
            node = stack.pop()
            before = None
            for child in node.children:
                self._parent[child.id] = node
                self._prev[child.id] = before
                before = child
                if child.child_count and _holds(starts, child.start_byte, child.end_byte):
                    stack.append(child)

    def parent(self, node: Any) -> Any:
        found = self._parent.get(node.id, _UNKNOWN)
        return node.parent if found is _UNKNOWN else found  # not .get(id, node.parent): that pays

    def prev_sibling(self, node: Any) -> Any:
        found = self._prev.get(node.id, _UNKNOWN)
        return node.prev_sibling if found is _UNKNOWN else found


class Plain:
    """The nodes' own attributes (a caller that walks no tree: a few lookups on a shallow node)."""

    @staticmethod
    def parent(node: Any) -> Any:
        return node.parent

    @staticmethod
    def prev_sibling(node: Any) -> Any:
        return node.prev_sibling


def _holds(starts: list[int], start: int, end: int) -> bool:
    """Whether a target starts within [start, end)."""
    i = bisect_left(starts, start)
    return i < len(starts) and starts[i] < end
