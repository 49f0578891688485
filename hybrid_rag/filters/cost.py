"""What one filter may cost: terms, distinct globs and their characters, each under a limit in
``retrieval.*`` (``filter_max_terms``, ``filter_max_globs``, ``filter_max_glob_chars``).

A term is one comparison; an ``in`` list costs one term per ``IN_LIST_VALUES`` values (a long list is
one bound set, so it is cheap: the default allows hundreds of thousands of values, while a chain of
5,000 comparisons already takes seconds to compile into SQL). A glob costs a pass over every path it is tested
against, so distinct globs (the same glob twice is matched once a path) and their total length are
held much lower. A filter over a limit is refused before any work, in one line naming the setting.
"""

from __future__ import annotations

from dataclasses import dataclass

from hybrid_rag.errors import InputError
from hybrid_rag.filters.globs import normalize_glob
from hybrid_rag.filters.language import And, Compare, FilterExpr, InList, Not, Or

IN_LIST_VALUES = 100  # values of an in-list that cost one term (store/filter_sql.py binds them as one set)


@dataclass(frozen=True)
class FilterCost:
    terms: int
    globs: int  # distinct (field, glob) pairs
    glob_chars: int  # over the distinct globs


def cost_of(expr: FilterExpr) -> FilterCost:
    """Terms, distinct globs and their characters in ``expr`` (iterative: any depth, any width)."""
    terms = 0
    globs: set[tuple[str, str]] = set()
    todo: list[FilterExpr] = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, (And, Or)):
            todo.extend(node.items)
        elif isinstance(node, Not):
            todo.append(node.item)
        elif isinstance(node, InList):
            terms += max(1, -(-len(node.values) // IN_LIST_VALUES))
        elif isinstance(node, Compare):
            terms += 1
            if node.op == "~":
                globs.add((node.field, normalize_glob(node.value)))
    return FilterCost(terms, len(globs), sum(len(g) for _, g in globs))


def check_cost(expr: FilterExpr | None, *, max_terms: int, max_globs: int, max_glob_chars: int) -> None:
    """InputError naming the limit when ``expr`` is over one of them."""
    if expr is None:
        return
    cost = cost_of(expr)
    for value, limit, setting, what in (
        (cost.terms, max_terms, "retrieval.filter_max_terms", "terms"),
        (cost.globs, max_globs, "retrieval.filter_max_globs", "distinct globs"),
        (cost.glob_chars, max_glob_chars, "retrieval.filter_max_glob_chars", "characters of globs"),
    ):
        if value > limit:
            raise InputError(f"the filter has {value} {what}, over {setting} ({limit}): narrow it")
