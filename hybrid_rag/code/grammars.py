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

from hybrid_rag.code import bindings


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
    references: str = ""  # reference patterns the wheel's tags query lacks (imports, types, scoped calls)
    wrappers: tuple[str, ...] = ()  # node types that hold a captured definition, widened to (Dart)
    body_after: str = ""  # a node type that follows a definition as its body, its sibling (Dart)


_RUST_EXTRA = """
(impl_item type: (_) @name) @definition.impl
(function_signature_item name: (identifier) @name) @definition.method
"""
_CPP_EXTRA = """
(function_definition declarator: (function_declarator declarator: (qualified_identifier
  scope: (template_type) name: (identifier) @name))) @definition.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier
  name: (qualified_identifier name: (identifier) @name)))) @definition.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier
  name: (qualified_identifier name: (qualified_identifier name: (identifier) @name))))) @definition.method
(namespace_definition name: (_) @name) @definition.namespace
(function_definition declarator: (function_declarator declarator: (operator_name) @name)) @definition.function
(alias_declaration name: (type_identifier) @name) @definition.type
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

# references (``@reference.KIND`` with ``@name``; an import also captures its ``@module``) the wheels'
# tags queries lack: imports everywhere, Python's decorators, bases and annotations, Rust's ``Foo::new()``,
# every type name in Java, Go, Rust and C/C++ (a definition's own name is never a reference), and
# whole queries for the grammars whose wheel has none (C, C++, C#, Kotlin, Swift, Bash)
_PY_REFS = """
(decorator (identifier) @name) @reference.call
(decorator (attribute attribute: (identifier) @name)) @reference.call
(class_definition superclasses: (argument_list (identifier) @name)) @reference.class
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @name))) @reference.class
(type (identifier) @name) @reference.type
(type (generic_type (identifier) @name)) @reference.type
(argument_list (identifier) @name) @reference.name
(keyword_argument value: (identifier) @name) @reference.name
(pair value: (identifier) @name) @reference.name
(return_statement (identifier) @name) @reference.name
(assignment right: (identifier) @name) @reference.name
(list (identifier) @name) @reference.name
(tuple (identifier) @name) @reference.name
(import_from_statement module_name: (_) @module name: (dotted_name (identifier) @name)) @reference.import
(import_from_statement module_name: (_) @module
  name: (aliased_import name: (dotted_name (identifier) @name))) @reference.import
(import_statement name: (dotted_name) @name @module) @reference.import
(import_statement
  name: (aliased_import name: (dotted_name) @module alias: (identifier) @name)) @reference.import
"""
_JS_IMPORTS = """
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @name)))
  source: (string (string_fragment) @module)) @reference.import
(import_statement (import_clause (identifier) @name)
  source: (string (string_fragment) @module)) @reference.import
"""
_JS_REFS = (
    _JS_IMPORTS
    + """
(class_heritage (identifier) @name) @reference.class
(jsx_opening_element name: (identifier) @name) @reference.class
(jsx_self_closing_element name: (identifier) @name) @reference.class
"""
)
_TS_REFS = (
    _JS_IMPORTS
    + bindings.TYPESCRIPT
    + """
(class_heritage (extends_clause value: (identifier) @name)) @reference.class
(implements_clause (type_identifier) @name) @reference.implementation
(generic_type name: (type_identifier) @name) @reference.type
(extends_type_clause (type_identifier) @name) @reference.class
"""
)
_TSX_REFS = (
    _TS_REFS
    + """
(jsx_opening_element name: (identifier) @name) @reference.class
(jsx_self_closing_element name: (identifier) @name) @reference.class
"""
)
_JAVA_REFS = (
    """
(type_identifier) @name @reference.type
(import_declaration (scoped_identifier name: (identifier) @name) @module) @reference.import
"""
    + bindings.JAVA
)
_GO_REFS = """
(import_spec name: (package_identifier) @name path: (_) @module) @reference.import
(import_spec !name path: (_) @name @module) @reference.import
"""
_RUST_REFS = """
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
(call_expression function: (generic_function function: (identifier) @name)) @reference.call
(macro_invocation macro: (scoped_identifier name: (identifier) @name)) @reference.call
(type_identifier) @name @reference.type
(use_declaration argument: (scoped_identifier path: (_) @module name: (identifier) @name)) @reference.import
(scoped_use_list path: (_) @module list: (use_list (identifier) @name)) @reference.import
"""
_C_REFS = """
(call_expression function: (identifier) @name) @reference.call
(type_identifier) @name @reference.type
"""
_CPP_REFS = (
    _C_REFS
    + """
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
(call_expression function: (template_function name: (identifier) @name)) @reference.call
(base_class_clause (type_identifier) @name) @reference.class
"""
    + bindings.CPP
)
_CSHARP_REFS = """
(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression function: (member_access_expression name: (identifier) @name)) @reference.call
(object_creation_expression type: (identifier) @name) @reference.class
(base_list (identifier) @name) @reference.implementation
"""
_KOTLIN_REFS = """
(call_expression (identifier) @name) @reference.call
(call_expression (navigation_expression (_) (identifier) @name)) @reference.call
(user_type (identifier) @name) @reference.type
"""
_SWIFT_REFS = """
(call_expression (simple_identifier) @name) @reference.call
(call_expression
  (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(user_type (type_identifier) @name) @reference.type
"""
# the languages added in issue 37 (RESULTS.md#grammars-grouped): a whole query where the wheel ships none
# (Haskell, Zig, Julia, Perl, Objective-C), a few patterns where its query lacks the types
_HASKELL = """
(declarations (function name: (variable) @name) @definition.function)
(declarations (bind name: (variable) @name) @definition.function)
(declarations (data_type name: (name) @name) @definition.type)
(declarations (newtype name: (name) @name) @definition.type)
(declarations (type_synonym name: (name) @name) @definition.type)
(declarations (type_family name: (name) @name) @definition.type)
(declarations (class name: (name) @name) @definition.interface)
(class_declarations (signature name: (variable) @name) @definition.method)
"""
_ZIG = """
(function_declaration name: (identifier) @name) @definition.function
(variable_declaration (identifier) @name (struct_declaration)) @definition.struct
(variable_declaration (identifier) @name (enum_declaration)) @definition.enum
(variable_declaration (identifier) @name (union_declaration)) @definition.union
(variable_declaration (identifier) @name (opaque_declaration)) @definition.type
"""
_JULIA = """
(module_definition name: (identifier) @name) @definition.module
(function_definition (signature (call_expression . (identifier) @name))) @definition.function
(function_definition (signature (call_expression . (field_expression (identifier) @name .))))
  @definition.function
(function_definition (signature (where_expression . (call_expression . (identifier) @name))))
  @definition.function
(function_definition (signature (typed_expression . (call_expression . (identifier) @name))))
  @definition.function
(assignment . (call_expression . (identifier) @name) (operator) @op (#eq? @op "=")) @definition.function
(macro_definition (signature (call_expression . (identifier) @name))) @definition.macro
(struct_definition (type_head (identifier) @name)) @definition.struct
(struct_definition (type_head (binary_expression . (identifier) @name))) @definition.struct
(struct_definition (type_head (parametrized_type_expression . (identifier) @name))) @definition.struct
(struct_definition (type_head (binary_expression . (parametrized_type_expression . (identifier) @name))))
  @definition.struct
(abstract_definition (type_head (identifier) @name)) @definition.type
(abstract_definition (type_head (binary_expression . (identifier) @name))) @definition.type
"""
_PERL = "(subroutine_declaration_statement name: (bareword) @name) @definition.function"
_OBJC = """
(class_interface . (identifier) @name) @definition.class
(class_implementation . (identifier) @name) @definition.class
(protocol_declaration . (identifier) @name) @definition.interface
(method_definition (method_type) . (identifier) @name) @definition.method
(method_declaration (method_type) . (identifier) @name) @definition.method
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
"""
_ELIXIR_EXTRA = """
(call target: (identifier) @ignore (arguments (alias) @name) (#eq? @ignore "defimpl")) @definition.impl
"""
_BASH_REFS = "(command name: (command_name (word) @name)) @reference.call"
_RUBY_REFS = "(constant) @name @reference.type"  # the wheel's bare-identifier pattern is dropped (extract.py)

GRAMMARS: tuple[Grammar, ...] = (
    Grammar(
        "python",
        "python",
        "tree_sitter_python",
        "language",
        (".py", ".pyi", ".pyw"),
        docstrings=True,
        references=_PY_REFS,
    ),
    Grammar(
        "javascript",
        "javascript",
        "tree_sitter_javascript",
        "language",
        (".js", ".mjs", ".cjs", ".jsx"),
        _JS_EXPORTED,
        references=_JS_REFS,
    ),
    Grammar(
        "typescript",
        "typescript",
        "tree_sitter_typescript",
        "language_typescript",
        (".ts", ".mts", ".cts"),
        _TS_EXTRA,
        inherits="tree_sitter_javascript",
        references=_TS_REFS,
    ),
    Grammar(
        "tsx",
        "typescript",
        "tree_sitter_typescript",
        "language_tsx",
        (".tsx",),
        _TS_EXTRA,
        inherits="tree_sitter_javascript",
        references=_TSX_REFS,
    ),
    Grammar(
        "java",
        "java",
        "tree_sitter_java",
        "language",
        (".java",),
        _JAVA_EXTRA,
        package=("package_declaration",),
        references=_JAVA_REFS,
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
        references=_KOTLIN_REFS,
    ),
    Grammar(
        "go", "go", "tree_sitter_go", "language", (".go",), package=("package_clause",), references=_GO_REFS
    ),
    Grammar(
        "rust",
        "rust",
        "tree_sitter_rust",
        "language",
        (".rs",),
        _RUST_EXTRA,
        separator="::",
        references=_RUST_REFS,
    ),
    Grammar("c", "c", "tree_sitter_c", "language", (".c", ".h"), separator="::", references=_C_REFS),
    Grammar(
        "cpp",
        "cpp",
        "tree_sitter_cpp",
        "language",
        (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp", ".inl"),
        _CPP_EXTRA,
        separator="::",
        marker=_CPP_MARKER,
        references=_CPP_REFS,
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
        references=_CSHARP_REFS,
    ),
    Grammar(
        "ruby",
        "ruby",
        "tree_sitter_ruby",
        "language",
        (".rb", ".rake", ".gemspec"),
        separator="::",
        references=_RUBY_REFS,
    ),
    Grammar("php", "php", "tree_sitter_php", "language_php", (".php",), _PHP_EXTRA, separator="::"),
    Grammar("swift", "swift", "tree_sitter_swift", "language", (".swift",), references=_SWIFT_REFS),
    Grammar(
        "scala", "scala", "tree_sitter_scala", "language", (".scala", ".sc"), package=("package_clause",)
    ),
    Grammar(
        "bash",
        "shell",
        "tree_sitter_bash",
        "language",
        (".sh", ".bash"),
        _BASH,
        has_tags=False,
        references=_BASH_REFS,
    ),
)

GRAMMARS += (
    Grammar("elixir", "elixir", "tree_sitter_elixir", "language", (".ex", ".exs"), _ELIXIR_EXTRA),
    Grammar("haskell", "haskell", "tree_sitter_haskell", "language", (".hs",), _HASKELL, has_tags=False),
    Grammar("lua", "lua", "tree_sitter_lua", "language", (".lua",)),
    Grammar("zig", "zig", "tree_sitter_zig", "language", (".zig",), _ZIG, has_tags=False),
    Grammar(
        "dart",
        "dart",
        "tree_sitter_dart",
        "language",
        (".dart",),
        wrappers=("method_signature",),
        body_after="function_body",
    ),
    Grammar("ocaml", "ocaml", "tree_sitter_ocaml", "language_ocaml", (".ml",)),
    Grammar("ocaml_interface", "ocaml", "tree_sitter_ocaml", "language_ocaml_interface", (".mli",)),
    Grammar("julia", "julia", "tree_sitter_julia", "language", (".jl",), _JULIA, has_tags=False),
    Grammar(
        "perl",
        "perl",
        "tree_sitter_perl",
        "language",
        (".pl", ".pm"),
        _PERL,
        separator="::",
        package=("package_statement",),
        has_tags=False,
    ),
    Grammar("objc", "objective-c", "tree_sitter_objc", "language", (".m", ".mm"), _OBJC, has_tags=False),
)

BY_EXTENSION: dict[str, Grammar] = {ext: g for g in GRAMMARS for ext in g.extensions}
# the loader's language -> the grammars to try, best first (a .h may be C++; a .ts file may hold JSX)
BY_LANGUAGE: dict[str, tuple[Grammar, ...]] = {
    "python": (GRAMMARS[0],),
    "javascript": (GRAMMARS[1],),
    "typescript": (GRAMMARS[2], GRAMMARS[3]),
    "c": (GRAMMARS[8], GRAMMARS[9]),
    "ocaml": tuple(g for g in GRAMMARS if g.language == "ocaml"),
    **{
        g.language: (g,)
        for g in GRAMMARS
        if g.language not in {"python", "javascript", "typescript", "c", "ocaml"}
    },
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
        parts = [tags_query(grammar, module), grammar.extra_query, grammar.references]
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
