"""Rules for a call through a receiver (``x.f()``, ``a::f()``) that the qualifier rules of
``references.py`` did not settle, in the brace languages (Python keeps its rules: the jedi study of
RESULTS.md#references measured them). From the hand-checked sample of
RESULTS.md#brace-edges-by-hand, where these calls were most of the wrong edges:

* ``std::``, ``core::``, ``alloc::`` (C++, Rust) name the standard library: never a definition of
  the repository (``std::move`` is not ``basic_memory_buffer::move``);
* a qualifier naming a module of the repository (Rust's ``adaptors::filter_map_ok``: the file
  ``adaptors/mod.rs``) keeps the candidates of that module's files;
* a call through a receiver is never a free function (Rust's ``xs.iter().rev()`` is
  ``Iterator::rev``, not ``itertools::rev``; TypeScript's ``list.every(f)``), in the languages
  without free functions reachable that way (Rust, Go, Java, JavaScript, TypeScript; C++ keeps
  namespaces, ``detail::f()``);
* a method name of the language's standard library that user types seldom define (Java's
  ``size``, ``put``, ``contains``; Rust's ``next``, ``as_ref``, ``into``; JavaScript's ``every``,
  ``push``; Go's ``String``; not ``get``, ``take``, ``add``, which they often do)
  called on a receiver of unknown type is that library's method far more often than the
  repository's one definition of the name: unresolved, never guessed by unique name or file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hybrid_rag.symbols.model import Symbol

STD_ROOTS = frozenset({"std", "core", "alloc"})
NO_FREE_CALLS = frozenset({"rust", "go", "java", "javascript", "typescript"})
_COMMON = {  # names user types seldom define that the standard library's common types all do
    "java": (
        "size put containsKey containsValue equals hashCode toString getClass write read close "
        "flush append iterator hasNext clear isEmpty length keySet values entrySet stream forEach "
        "indexOf substring startsWith endsWith trim split compareTo valueOf toURI toURL "
        "getResourceAsStream getMessage charAt toArray contains"
    ),
    "rust": (
        "next next_back fold filter rev cloned copied clone into as_ref as_mut product sum size_hint "
        "collect iter iter_mut into_iter unwrap expect fmt to_string cmp partial_cmp eq ne chain zip "
        "peekable fuse enumerate step_by by_ref try_fold for_each flat_map"
    ),
    "javascript": (
        "every some map filter forEach push pop shift unshift slice splice concat join reduce "
        "findIndex indexOf includes keys values entries then catch finally toString call apply bind"
    ),
    "go": "String Error Write Read Close Len Less Swap",
}
COMMON_METHODS = {family: frozenset(words.split()) for family, words in _COMMON.items()}
COMMON_METHODS["typescript"] = COMMON_METHODS["javascript"]


def qualifier_head(qualifier: str) -> str:
    """The first identifier of a qualifier (``std`` of ``std::ranges``), "" for an expression."""
    text = qualifier.strip().lstrip(":")
    head = text.split("::")[0].split(".")[0]
    return head if head.isidentifier() else ""


def narrow(
    language: str,
    name: str,
    qualifier: str,
    candidates: Sequence[Symbol],
    holds: Callable[[str, Symbol], int],
) -> tuple[list[Symbol], str]:
    """The candidates a call through ``qualifier`` can reach, and why none when none ("" when
    the rules leave them all). ``holds(module, symbol)``: ``references.module_holds`` from the
    calling file."""
    if language == "python":
        return list(candidates), ""
    if language in ("c", "cpp", "rust") and qualifier_head(qualifier) in STD_ROOTS:
        return [], "the standard library"
    in_module = (
        [s for s in candidates if holds(qualifier, s)]
        if "::" in qualifier or qualifier.isidentifier()
        else []
    )
    modules = [s for s in in_module if s.kind == "function" or s.parent is None]
    if modules:
        return modules, ""
    kept = list(candidates)
    if language in NO_FREE_CALLS:
        kept = [s for s in kept if s.kind != "function"]
        if not kept:
            return [], "a receiver's method, not a function"
    if name in COMMON_METHODS.get(language, ()):
        return [], "a standard library method name on a receiver of unknown type"
    return kept, ""
