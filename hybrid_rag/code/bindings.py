"""Declarations of names with their written types, captured as references of kind ``binding``
(``@name`` the declared name, ``@module`` its type when one is written), for the languages whose
calls go through receivers (Java, TypeScript, C++): ``Foo x = ...; x.bar()``, a field
``private final Foo pool;``, a parameter ``(Subscriber<T> subscriber)``, ``const s = new Foo()``,
a destructured ``const { connector } = config``. ``symbols/bindings.py`` reads them to type a
call's receiver (RESULTS.md#reference-precision-again); they are never uses of a definition
(``refs`` and ``callers`` leave them out).

One name node captured by several patterns (``var x = new Foo()``: the placeholder ``var`` and
the ``new``) keeps the capture whose type is a real one (``references.from_captures``).
"""

from __future__ import annotations

BINDING = "binding"
# written where a type is inferred: no type at all for the receiver rules
PLACEHOLDER_TYPES = frozenset({"var", "auto", "decltype(auto)", "let", "const"})

JAVA = """
(local_variable_declaration type: (_) @module
  declarator: (variable_declarator name: (identifier) @name)) @reference.binding
(field_declaration type: (_) @module declarator: (variable_declarator name: (identifier) @name))
  @reference.binding
(formal_parameter type: (_) @module name: (identifier) @name) @reference.binding
(variable_declarator name: (identifier) @name value: (object_creation_expression type: (_) @module))
  @reference.binding
(enhanced_for_statement type: (_) @module name: (identifier) @name) @reference.binding
(catch_formal_parameter (catch_type) @module name: (identifier) @name) @reference.binding
"""
TYPESCRIPT = """
(variable_declarator name: (identifier) @name type: (type_annotation (_) @module)) @reference.binding
(variable_declarator name: (identifier) @name value: (new_expression constructor: (_) @module))
  @reference.binding
(variable_declarator name: (identifier) @name) @reference.binding
(variable_declarator name: (object_pattern (shorthand_property_identifier_pattern) @name)) @reference.binding
(variable_declarator name: (object_pattern (object_assignment_pattern
  left: (shorthand_property_identifier_pattern) @name))) @reference.binding
(variable_declarator name: (array_pattern (identifier) @name)) @reference.binding
(object_pattern (pair_pattern value: (identifier) @name)) @reference.binding
(object_pattern (rest_pattern (identifier) @name)) @reference.binding
(arrow_function parameter: (identifier) @name) @reference.binding
(required_parameter pattern: (identifier) @name type: (type_annotation (_) @module)) @reference.binding
(required_parameter pattern: (identifier) @name) @reference.binding
(optional_parameter pattern: (identifier) @name type: (type_annotation (_) @module)) @reference.binding
(optional_parameter pattern: (identifier) @name) @reference.binding
(required_parameter pattern: (object_pattern (shorthand_property_identifier_pattern) @name))
  @reference.binding
(public_field_definition name: (property_identifier) @name type: (type_annotation (_) @module))
  @reference.binding
"""
CPP = """
(declaration type: (_) @module declarator: [
  (identifier) @name
  (init_declarator declarator: [
    (identifier) @name
    (reference_declarator (identifier) @name)
    (pointer_declarator declarator: (identifier) @name)])]) @reference.binding
(parameter_declaration type: (_) @module declarator: [
  (identifier) @name
  (reference_declarator (identifier) @name)
  (pointer_declarator declarator: (identifier) @name)]) @reference.binding
(optional_parameter_declaration type: (_) @module declarator: [
  (identifier) @name
  (reference_declarator (identifier) @name)]) @reference.binding
(field_declaration type: (_) @module declarator: [
  (field_identifier) @name
  (pointer_declarator declarator: (field_identifier) @name)
  (reference_declarator (field_identifier) @name)]) @reference.binding
(for_range_loop type: (_) @module declarator: [
  (identifier) @name
  (reference_declarator (identifier) @name)]) @reference.binding
(base_class_clause [
  (template_type name: (type_identifier) @name)
  (qualified_identifier name: [(type_identifier) @name (template_type name: (type_identifier) @name)])])
  @reference.class
"""


def better(held_module: str, module: str) -> bool:
    """A second binding capture of the same name replaces the first when it writes a type and
    the first wrote none or a placeholder (``var x = new Foo()``)."""
    return (
        bool(module)
        and module not in PLACEHOLDER_TYPES
        and (not held_module or held_module in PLACEHOLDER_TYPES)
    )


_PRIMITIVE_WORDS = (  # no methods (TypeScript's ``string``, ``number`` have some: kept)
    "int long short char bool float double void size_t ssize_t ptrdiff_t unsigned signed "
    "uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t wchar_t byte boolean "
    "std::size_t std::ptrdiff_t std::uint8_t std::uint16_t std::uint32_t std::uint64_t "
    "std::int8_t std::int16_t std::int32_t std::int64_t"
)
_PRIMITIVE = frozenset(_PRIMITIVE_WORDS.split())


def primitive(written: str) -> bool:
    """A declared type that has no methods to call (``int``, ``const size_t``, Java's
    ``boolean``): not stored, it can type no receiver."""
    words = [w for w in written.replace("&", " ").replace("*", " ").split() if w not in ("const", "unsigned")]
    return (bool(words) and all(w in _PRIMITIVE for w in words)) or written.strip() == "unsigned"
