"""The package's folders in layers: an import only points down (or across its own layer), never up.

The units are the folders of ``hybrid_rag/`` and its root-level modules; ``LAYERS`` lists them
bottom first, once (``docs/architecture.md`` draws the same list). Every import counts, lazy ones
inside functions and those under ``if TYPE_CHECKING:`` included: the graph is read with ``ast`` by
``test_package_has_no_import_cycle.py``. A unit that is in no layer fails the test, so a new folder
or root module is placed on purpose.

Root-level modules are the bottom layer (``base``: types, errors, settings and the small helpers
every layer uses) or the top (the engine and what is built on it); ``protocols.py`` alone sits in
between, above ``filters/``, because the seams' signatures take a ``FilterExpr``.
"""

from __future__ import annotations

from collections.abc import Mapping

from test_package_has_no_import_cycle import MODULES, find_cycle, graph

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (  # bottom first
    (
        "base",
        (
            "errors.py", "locators.py", "types.py", "settings.py", "deadline.py", "paths.py",
            "private_files.py", "lazy_imports.py", "jsonlines.py", "tokens.py", "vectors.py",
            "settings_base.py", "settings_index.py", "settings_ingest.py",
        ),
    ),
    ("text", ("lang",)),  # language detection, analyzers, tokenizer, identifiers, normalisation
    ("code", ("code",)),  # source code through tree-sitter
    ("symbols", ("symbols",)),  # a file's definitions and references, as data
    ("filters", ("filters",)),  # the filter language
    ("seams", ("protocols.py", "request.py")),  # the stages' protocols; the typed query
    ("store", ("store",)),
    ("indices", ("indices",)),
    ("models", ("models",)),  # above indices: ``embedding.model: auto`` reads the live version's model
    ("ingest", ("ingest",)),
    ("retrieval", ("retrieval",)),
    ("context", ("context",)),
    ("engine", ("querylog.py", "engine.py", "lifecycle.py", "second_job.py")),
    ("front ends", ("evaluation", "watch.py", "server", "compat", "integrations", "client.py")),
    (
        "command line",
        (
            "cli", "interrupts.py", "progress.py", "terminal.py", "__init__.py",
        ),
    ),
)  # fmt: skip


def unit_of(module: str) -> str:
    """The layer unit of a module: its folder under ``hybrid_rag/``, or its file name at the root
    (``__init__.py`` for the package itself)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    if len(parts) == 2 and MODULES[module].name != "__init__.py":
        return parts[1] + ".py"
    return parts[1]


def unit_graph(edges: Mapping[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """unit -> unit it imports -> the module arrows that make it (``a -> b``)."""
    units: dict[str, dict[str, list[str]]] = {}
    for module, targets in edges.items():
        arrows = units.setdefault(unit_of(module), {})
        for target in sorted(targets):
            if unit_of(target) != unit_of(module):
                arrows.setdefault(unit_of(target), []).append(f"{module} -> {target}")
    return units


def upward_arrows(
    units: Mapping[str, Mapping[str, list[str]]], layers: tuple[tuple[str, tuple[str, ...]], ...]
) -> list[str]:
    level = {unit: i for i, (_, members) in enumerate(layers) for unit in members}
    return [
        f"{arrow} ({layers[level[source]][0]} imports {layers[level[target]][0]})"
        for source, targets in sorted(units.items())
        for target, arrows in sorted(targets.items())
        if level[target] > level[source]
        for arrow in arrows
    ]


def test_every_folder_and_root_module_has_one_layer() -> None:
    declared = [unit for _, members in LAYERS for unit in members]
    assert len(declared) == len(set(declared)), "a unit listed twice"
    assert set(declared) == {unit_of(module) for module in MODULES}


def test_no_folder_imports_a_folder_above_it() -> None:
    assert upward_arrows(unit_graph(graph()), LAYERS) == []


def test_no_two_folders_import_each_other_around_a_circle() -> None:
    units = unit_graph(graph())
    cycle = find_cycle({unit: set(targets) for unit, targets in units.items()})
    assert cycle is None, "folders in a cycle: " + " -> ".join(cycle or [])


def test_an_upward_arrow_is_found_and_named() -> None:
    """The rule bites: a lower unit that imports a higher one is reported with the module arrow."""
    edges = {"hybrid_rag.lang.tokenize": {"hybrid_rag.store.store"}, "hybrid_rag.store.store": set()}
    layers = (("text", ("lang",)), ("store", ("store",)))
    assert upward_arrows(unit_graph(edges), layers) == [
        "hybrid_rag.lang.tokenize -> hybrid_rag.store.store (text imports store)"
    ]


def test_a_lazy_import_inside_a_function_counts() -> None:
    """``lang/affix_tokenizer.py`` finds its rules' folder inside a function: the arrow is read."""
    assert "hybrid_rag.paths" in graph()["hybrid_rag.lang.affix_tokenizer"]
