"""Which tree-sitter grammar parses which file, and the tags query each one runs.

One row per grammar: the wheel's module and the function that returns its language, the file
extensions it owns, where the wheel keeps its tags query (``TAGS_QUERY`` or ``queries/tags.scm``),
and the few things a wheel's query lacks, written beside it as small overrides: the patterns it
has none of (Kotlin, C# and Bash ship no tags query; Rust's has no ``impl`` blocks, C++'s no
namespaces), how the language joins a qualified name, and the top-level node that names the
package a file belongs to. Everything loads lazily and is cached; a wheel that is not installed
makes its grammar unavailable (``load`` answers None) and the caller falls back to the regex path.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Grammar:
    """One tree-sitter grammar and how the extractor reads its tags."""

    name: str  # the grammar's own name (tsx, php, ...)
    language: str  # the loader's language name for these files (hybrid_rag.ingest.loaders)
    module: str  # the wheel's import name
    function: str  # the module function that returns the language pointer
    extensions: tuple[str, ...]
    extra_query: str = ""  # patterns the wheel's tags query lacks
    separator: str = "."  # joins a qualified name
    package: tuple[str, ...] = ()  # top-level node types that name the file's package
    docstrings: bool = False  # the first string of a body is the doc (Python)
    has_tags: bool = True  # False: the wheel ships no tags query; extra_query is the whole query
    inherits: str = ""  # a wheel whose tags query this grammar's extends (TypeScript: JavaScript's)
    marker: str = ""  # a regex: text it finds is tried with this grammar first (C++ in a .h file)


_RUST_EXTRA = """
(impl_item type: (_) @name) @definition.impl
(function_signature_item name: (identifier) @name) @definition.method
"""
_CPP_EXTRA = """
(function_definition declarator: (function_declarator declarator: (qualified_identifier
  scope: (template_type) name: (identifier) @name))) @definition.method
(namespace_definition name: (_) @name) @definition.namespace
(function_definition declarator: (function_declarator declarator: (operator_name) @name)) @definition.function
"""
_CPP_MARKER = (
    r"(?m)^\s*(?:namespace\s+\w|class\s+\w+\s*[:{]|template\s*<|(?:public|private|protected):)|\w::\w"
)
_KOTLIN = """
(class_declaration name: (_) @name) @definition.class
(object_declaration name: (_) @name) @definition.object
(function_declaration name: (_) @name) @definition.function
"""
_CSHARP = """
(class_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(property_declaration name: (identifier) @name) @definition.property
(namespace_declaration name: (_) @name) @definition.namespace
"""
_BASH = "(function_definition name: (word) @name) @definition.function"
_PHP_EXTRA = "(method_declaration name: (name) @name) @definition.method"
_JAVA_EXTRA = """
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(constructor_declaration name: (identifier) @name) @definition.method
"""
# an exported constant that holds a class or what a call builds (zod's ``export const $ZodString =
# core.$constructor(...)``, ``export const registry = new Map()``) is a definition; the wheel's query
# has those holding a function (``const f = (x) => ...``) already
_JS_EXPORTED = """
(export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name
  value: [(call_expression) (new_expression)]) @definition.constant))
(export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name
  value: (class)) @definition.class))
"""
_TS_EXTRA = (
    _JS_EXPORTED
    + """
(enum_declaration name: (identifier) @name) @definition.enum
(type_alias_declaration name: (type_identifier) @name) @definition.type
(abstract_class_declaration name: (type_identifier) @name) @definition.class
"""
)

GRAMMARS: tuple[Grammar, ...] = (
    Grammar("python", "python", "tree_sitter_python", "language", (".py", ".pyi", ".pyw"), docstrings=True),
    Grammar(
        "javascript",
        "javascript",
        "tree_sitter_javascript",
        "language",
        (".js", ".mjs", ".cjs", ".jsx"),
        _JS_EXPORTED,
    ),
    Grammar(
        "typescript",
        "typescript",
        "tree_sitter_typescript",
        "language_typescript",
        (".ts", ".mts", ".cts"),
        _TS_EXTRA,
        inherits="tree_sitter_javascript",
    ),
    Grammar(
        "tsx",
        "typescript",
        "tree_sitter_typescript",
        "language_tsx",
        (".tsx",),
        _TS_EXTRA,
        inherits="tree_sitter_javascript",
    ),
    Grammar(
        "java",
        "java",
        "tree_sitter_java",
        "language",
        (".java",),
        _JAVA_EXTRA,
        package=("package_declaration",),
    ),
    Grammar(
        "kotlin",
        "kotlin",
        "tree_sitter_kotlin",
        "language",
        (".kt", ".kts"),
        _KOTLIN,
        package=("package_header",),
        has_tags=False,
    ),
    Grammar("go", "go", "tree_sitter_go", "language", (".go",), package=("package_clause",)),
    Grammar("rust", "rust", "tree_sitter_rust", "language", (".rs",), _RUST_EXTRA, separator="::"),
    Grammar("c", "c", "tree_sitter_c", "language", (".c", ".h"), separator="::"),
    Grammar(
        "cpp",
        "cpp",
        "tree_sitter_cpp",
        "language",
        (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp", ".inl"),
        _CPP_EXTRA,
        separator="::",
        marker=_CPP_MARKER,
    ),
    Grammar(
        "csharp",
        "csharp",
        "tree_sitter_c_sharp",
        "language",
        (".cs",),
        _CSHARP,
        package=("file_scoped_namespace_declaration",),
        has_tags=False,
    ),
    Grammar("ruby", "ruby", "tree_sitter_ruby", "language", (".rb", ".rake", ".gemspec"), separator="::"),
    Grammar("php", "php", "tree_sitter_php", "language_php", (".php",), _PHP_EXTRA, separator="::"),
    Grammar("swift", "swift", "tree_sitter_swift", "language", (".swift",)),
    Grammar(
        "scala", "scala", "tree_sitter_scala", "language", (".scala", ".sc"), package=("package_clause",)
    ),
    Grammar("bash", "shell", "tree_sitter_bash", "language", (".sh", ".bash"), _BASH, has_tags=False),
)

BY_EXTENSION: dict[str, Grammar] = {ext: g for g in GRAMMARS for ext in g.extensions}
# the loader's language -> the grammars to try, best first (a .h may be C++; a .ts file may hold JSX)
BY_LANGUAGE: dict[str, tuple[Grammar, ...]] = {
    "python": (GRAMMARS[0],),
    "javascript": (GRAMMARS[1],),
    "typescript": (GRAMMARS[2], GRAMMARS[3]),
    "c": (GRAMMARS[8], GRAMMARS[9]),
    **{g.language: (g,) for g in GRAMMARS if g.language not in {"python", "javascript", "typescript", "c"}},
}


def ordered(grammars: Sequence[Grammar], text: str) -> tuple[str, ...]:
    """Names of ``grammars`` to try on ``text``: only those whose marker the text holds, if any
    does (a C header that declares a namespace is C++, whatever C's parse of it says)."""
    marked = [g for g in grammars if g.marker and re.search(g.marker, text)]
    return tuple(g.name for g in marked or grammars)


def grammar_for_path(path: str) -> Grammar | None:
    """The grammar that owns ``path``'s extension (lower-cased), or None."""
    return BY_EXTENSION.get(os.path.splitext(path)[1].lower())


@dataclass(frozen=True)
class Loaded:
    """A grammar ready to run: its language, tags query and a parser (one per thread)."""

    grammar: Grammar
    language: Any
    query: Any

    def parser(self) -> Any:
        parsers = _PARSERS.__dict__.setdefault("by_name", {})
        parser = parsers.get(self.grammar.name)
        if parser is None:
            import tree_sitter

            parser = parsers[self.grammar.name] = tree_sitter.Parser(self.language)
        return parser


_PARSERS = threading.local()


@functools.cache
def load(name: str) -> Loaded | None:
    """The grammar called ``name`` with its compiled query, or None when its wheel (or
    py-tree-sitter) is not installed or does not load with the installed tree-sitter."""
    grammar = next((g for g in GRAMMARS if g.name == name), None)
    if grammar is None:
        return None
    try:
        import tree_sitter

        module = importlib.import_module(grammar.module)
        language = tree_sitter.Language(getattr(module, grammar.function)())
        parts = [tags_query(grammar, module), grammar.extra_query]
        if grammar.inherits:
            parts.insert(0, tags_query(grammar, importlib.import_module(grammar.inherits)))
        source = "\n".join(parts)
        query = tree_sitter.Query(language, source)
    except Exception:  # a missing or incompatible wheel: no grammar, the regex path
        return None
    return Loaded(grammar, language, query)


def tags_query(grammar: Grammar, module: Any) -> str:
    """The wheel's own tags query ("" when it ships none)."""
    if not grammar.has_tags:
        return ""
    text = getattr(module, "TAGS_QUERY", None)
    if text:
        return str(text)
    path = os.path.join(os.path.dirname(module.__file__), "queries", "tags.scm")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return f.read()
    return ""


def wheel_version(grammar: Grammar) -> str | None:
    """The installed version of the grammar's wheel (for reports)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(grammar.module.replace("_", "-"))
    except PackageNotFoundError:
        return None
