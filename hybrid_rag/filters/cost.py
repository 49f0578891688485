"""What one filter may cost: terms, distinct globs and their characters, each under a limit in
``retrieval.*`` (``filter_max_terms``, ``filter_max_globs``, ``filter_max_glob_chars``).

A term is one comparison; an ``in`` list costs one term per ``IN_LIST_VALUES`` values (a long list is
one bound set, so it is cheap: the default allows hundreds of thousands of values). A ``meta.``
comparison costs ``META_TERM_COST`` terms: it compiles to a JSON lookup in the chunk's metadata and
then its document's, 20 to 40 times the work of a column comparison (4,999 of them, within the old
count, took 47 s of CPU to build and compile into SQL; RESULTS.md#hostile-input-round-three); ``meta.k = a or
meta.k = b`` is one bound set, as the SQL runs it. A glob costs a pass over every path it is tested
against, so distinct globs (the same glob twice is matched once a path) and their total length are
held much lower. A filter over a limit is refused before any work, in one line naming the setting.
"""

from __future__ import annotations

from dataclasses import dataclass

from hybrid_rag.errors import InputError
from hybrid_rag.filters.globs import normalize_glob
from hybrid_rag.filters.language import DATE, FIELDS, META_PREFIX, And, Compare, FilterExpr, InList, Not, Or

IN_LIST_VALUES = 100  # values of an in-list that cost one term (store/filter_sql.py binds them as one set)
META_TERM_COST = 20  # terms one ``meta.`` comparison costs (measured: RESULTS.md#hostile-input-round-three)


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
        if isinstance(node, Or):
            sets, rest = _equality_sets(node.items)
            terms += sum(_weight(f) * max(1, -(-n // IN_LIST_VALUES)) for f, n in sets.items())
            todo.extend(rest)
        elif isinstance(node, And):
            todo.extend(node.items)
        elif isinstance(node, Not):
            todo.append(node.item)
        elif isinstance(node, InList):
            terms += _weight(node.field) * max(1, -(-len(node.values) // IN_LIST_VALUES))
        elif isinstance(node, Compare):
            terms += _weight(node.field)
            if node.op == "~":
                globs.add((node.field, normalize_glob(node.value)))
    return FilterCost(terms, len(globs), sum(len(g) for _, g in globs))


def _weight(field: str) -> int:
    return META_TERM_COST if field.startswith(META_PREFIX) else 1


def _equality_sets(items: tuple[FilterExpr, ...]) -> tuple[dict[str, int], list[FilterExpr]]:
    """An ``or``'s equalities per field (values), which ``store/filter_sql.py`` runs as one bound
    set, and its other items."""
    sets: dict[str, int] = {}
    rest: list[FilterExpr] = []
    for item in items:
        if isinstance(item, Compare) and item.op in ("=", "==") and FIELDS.get(item.field) != DATE:
            sets[item.field] = sets.get(item.field, 0) + 1
        elif isinstance(item, InList) and not item.negated:
            sets[item.field] = sets.get(item.field, 0) + len(item.values)
        else:
            rest.append(item)
    return sets, rest


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
            weight = f" (a `meta.` comparison counts {META_TERM_COST})" if what == "terms" else ""
            raise InputError(f"the filter has {value} {what}, over {setting} ({limit}){weight}: narrow it")
